//! Word-at-a-time byte search for short distances.
//!
//! `memchr` is the tool for long runs, but entering its vectorised search costs a few
//! dozen instructions, more than the search itself when the byte is a dozen bytes
//! away: the usual case inside code strings, which escape a quote or a newline every
//! line or so. Eight bytes are tested at once here, in plain integer arithmetic.
//!
//! Invariant of every mask below: a byte's high bit is set for each byte that matches,
//! except that a borrow may also flag some bytes *above* a real match. The lowest
//! flagged byte is therefore always a real match, which is all [`find`] reads; masks
//! may be OR-ed, since the lowest bit of an OR is the lowest real match of either.

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Bytes of `x` equal to `b`.
#[inline]
pub(crate) fn eq(x: u64, b: u8) -> u64 {
    let y = x ^ (LO * u64::from(b));
    y.wrapping_sub(LO) & !y & HI
}

/// Bytes of `x` below `n` (`n` at most 128).
#[inline]
pub(crate) fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(LO * u64::from(n)) & !x & HI
}

/// The first byte of `hay` that `word` flags (tested 8 bytes at a time) or, in the last
/// bytes that do not fill a word, that `byte` accepts. The two must agree.
#[inline]
pub(crate) fn find(
    hay: &[u8],
    word: impl Fn(u64) -> u64,
    byte: impl Fn(u8) -> bool,
) -> Option<usize> {
    let mut words = hay.chunks_exact(8);
    let mut at = 0;
    for w in &mut words {
        let m = word(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        if m != 0 {
            return Some(at + (m.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| byte(b))
        .map(|p| at + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random haystacks over the bytes that could fool the masks: neighbours of the
    /// searched bytes, 0x00/0x01 above a match (a borrow), high-bit bytes.
    fn haystacks(mut each: impl FnMut(&[u8])) {
        let alphabet = [
            b'a', b'"', b'\\', 0x1f, 0x20, b'!', b'#', b'[', b']', 0, 1, 0x7f, 0x80, 0xa2, 0xdc,
            0xff,
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..20_000 {
            let len = rng.usize(0..80);
            let hay: Vec<u8> = (0..len)
                .map(|_| {
                    // Mostly plain bytes, so matches sit at every distance.
                    let pick = if rng.u8(..) < 220 {
                        rng.usize(5..)
                    } else {
                        rng.usize(..)
                    };
                    alphabet[pick % alphabet.len()]
                })
                .collect();
            each(&hay);
        }
    }

    #[test]
    fn find_equals_a_plain_loop() {
        haystacks(|hay| {
            let quote = |b: u8| b == b'"' || b == b'\\';
            assert_eq!(
                find(hay, |x| eq(x, b'"') | eq(x, b'\\'), quote),
                hay.iter().position(|&b| quote(b)),
                "{hay:?}"
            );
            let control = |b: u8| b < 0x20 || b == b'"';
            assert_eq!(
                find(hay, |x| below(x, 0x20) | eq(x, b'"'), control),
                hay.iter().position(|&b| control(b)),
                "{hay:?}"
            );
        });
    }
}
