//! Whether a text is one JSON object (RFC 8259), checked incrementally.
//!
//! The parser streams a call's arguments as the model wrote them and never rejects a
//! call for them; this check only tells diagnostics whether what the model wrote is one
//! JSON object: `{`, members, `}`, with whitespace around it and nothing else.
//! Duplicate keys are allowed (RFC 8259 allows them; the parser keeps them), any nesting
//! depth and any number spelling the grammar allows (`1e400` is valid text), and a
//! `\uXXXX` escape is any four hex digits (the grammar does not pair surrogates).
//!
//! State survives between [`feed`](ObjectCheck::feed) calls, so a text fed in pieces is
//! looked at once, byte by byte, however it is cut; a caller that has the whole text
//! feeds it once. Container nesting is a bit stack (one bit per level), so any depth is
//! checked in constant stack and `depth / 8` bytes of heap.

/// Where a number is (the JSON number grammar, one state per position). The wire's
/// arguments checker reads numbers by the same grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    /// The state after a number's first byte, if `b` can begin one.
    pub(crate) fn start(b: u8) -> Option<Num> {
        match b {
            b'-' => Some(Num::Minus),
            b'0' => Some(Num::Zero),
            b'1'..=b'9' => Some(Num::Int),
            _ => None,
        }
    }

    /// The state after `b`, if the number goes on with it.
    pub(crate) fn next(self, b: u8) -> Option<Num> {
        match (self, b) {
            (Num::Minus, b'0') => Some(Num::Zero),
            (Num::Minus | Num::Int, b'0'..=b'9') => Some(Num::Int),
            (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
            (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::Exp),
            (Num::Exp, b'+' | b'-') => Some(Num::ExpSign),
            (Num::Exp | Num::ExpSign | Num::ExpDigits, b'0'..=b'9') => Some(Num::ExpDigits),
            _ => None,
        }
    }

    /// The number so far is a complete JSON number.
    pub(crate) fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Before the root (whitespace).
    Start,
    /// After `{`: a key or `}`.
    ObjOpen,
    /// After `[`: a value or `]`.
    ArrOpen,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// A value (after `:`, or after `,` in an array).
    Value,
    /// After a value: `,` or the container's close.
    After,
    /// Inside a string; `key` says it is an object key.
    Str {
        key: bool,
        esc: Esc,
    },
    Num(Num),
    /// A literal; `rest` is what it still needs.
    Lit {
        rest: &'static [u8],
    },
    /// The root object closed: whitespace only.
    Done,
    /// Not one JSON object: nothing more is looked at.
    No,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    No,
    Backslash,
    /// `\u` and this many hex digits so far.
    Hex(u8),
}

/// An incremental "is this one JSON object" check: see the module docs.
#[derive(Debug, Clone)]
pub struct ObjectCheck {
    st: St,
    /// Open containers, innermost last: bit set for an object. Bits past `depth` are
    /// stale.
    stack: Vec<u64>,
    depth: usize,
}

impl Default for ObjectCheck {
    fn default() -> Self {
        Self::new()
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl ObjectCheck {
    /// A check of an empty text so far.
    pub fn new() -> Self {
        ObjectCheck {
            st: St::Start,
            stack: Vec::new(),
            depth: 0,
        }
    }

    /// Whether `text` alone is one JSON object.
    pub fn is_object(text: &str) -> bool {
        let mut c = ObjectCheck::new();
        c.feed(text);
        c.finish()
    }

    /// Whether the text fed so far, if it ended here, is one JSON object.
    pub fn finish(&self) -> bool {
        self.st == St::Done
    }

    fn push(&mut self, object: bool) {
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if word == self.stack.len() {
            self.stack.push(0);
        }
        if object {
            self.stack[word] |= 1 << bit;
        } else {
            self.stack[word] &= !(1 << bit);
        }
        self.depth += 1;
    }

    /// Whether the innermost open container is an object.
    fn in_object(&self) -> bool {
        let d = self.depth - 1;
        self.stack[d / 64] & (1 << (d % 64)) != 0
    }

    /// Closes the innermost container if `close` matches it.
    fn close(&mut self, close: u8) -> St {
        if self.depth == 0 || self.in_object() != (close == b'}') {
            return St::No;
        }
        self.depth -= 1;
        if self.depth == 0 {
            St::Done
        } else {
            St::After
        }
    }

    /// The state after the first byte of a value.
    fn value(&mut self, b: u8) -> St {
        match b {
            b'{' => {
                self.push(true);
                St::ObjOpen
            }
            b'[' => {
                self.push(false);
                St::ArrOpen
            }
            b'"' => St::Str {
                key: false,
                esc: Esc::No,
            },
            b't' => St::Lit { rest: b"rue" },
            b'f' => St::Lit { rest: b"alse" },
            b'n' => St::Lit { rest: b"ull" },
            _ => Num::start(b).map_or(St::No, St::Num),
        }
    }

    /// Feeds the next piece of the text.
    pub fn feed(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if self.st == St::No {
                return;
            }
            if let St::Str { key, esc: Esc::No } = self.st {
                // Plain string text runs to the next quote, backslash or control byte.
                match bytes[i..]
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                {
                    None => return,
                    Some(p) => {
                        i += p;
                        self.st = match bytes[i] {
                            b'"' if key => St::Colon,
                            b'"' => St::After,
                            b'\\' => St::Str {
                                key,
                                esc: Esc::Backslash,
                            },
                            _ => St::No,
                        };
                        i += 1;
                        continue;
                    }
                }
            }
            let b = bytes[i];
            // `true`: the byte is consumed; `false`: it ends a number and is looked at
            // again in the state after it.
            let (st, consumed) = self.step(b);
            self.st = st;
            if consumed {
                i += 1;
            }
        }
    }

    fn step(&mut self, b: u8) -> (St, bool) {
        let st = match self.st {
            St::Start if is_ws(b) => St::Start,
            St::Start if b == b'{' => {
                self.push(true);
                St::ObjOpen
            }
            St::ObjOpen | St::Key | St::Colon | St::Value | St::ArrOpen | St::After | St::Done
                if is_ws(b) =>
            {
                self.st
            }
            St::ObjOpen if b == b'}' => self.close(b),
            St::ObjOpen | St::Key if b == b'"' => St::Str {
                key: true,
                esc: Esc::No,
            },
            St::Colon if b == b':' => St::Value,
            St::ArrOpen if b == b']' => self.close(b),
            St::ArrOpen | St::Value => self.value(b),
            St::After if b == b',' => {
                if self.in_object() {
                    St::Key
                } else {
                    St::Value
                }
            }
            St::After if b == b'}' || b == b']' => self.close(b),
            St::Str { key, esc } => match esc {
                Esc::Backslash => match b {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        St::Str { key, esc: Esc::No }
                    }
                    b'u' => St::Str {
                        key,
                        esc: Esc::Hex(0),
                    },
                    _ => St::No,
                },
                Esc::Hex(n) if b.is_ascii_hexdigit() => St::Str {
                    key,
                    esc: if n == 3 { Esc::No } else { Esc::Hex(n + 1) },
                },
                _ => St::No,
            },
            St::Num(n) => {
                return match n.next(b) {
                    Some(n) => (St::Num(n), true),
                    // The number ended before this byte (or was malformed).
                    None if n.complete() => (St::After, false),
                    None => (St::No, true),
                };
            }
            St::Lit { rest } if rest.first() == Some(&b) => {
                if rest.len() == 1 {
                    St::After
                } else {
                    St::Lit { rest: &rest[1..] }
                }
            }
            _ => St::No,
        };
        (st, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_and_not() {
        let yes = [
            "{}",
            " {} \n",
            r#"{"a":1}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":[1,-2.5e+3,true,false,null,{"b":"\u00e9\n"}],"c":{}}"#,
            r#"{"x":"\ud83d"}"#,
            r#"{"n":1e400,"z":0,"f":0.0,"e":1E5}"#,
            "{\"k\":\"日本語 😀\"}",
        ];
        let no = [
            "",
            "   ",
            "[1,2]",
            "\"text\"",
            "12",
            "null",
            "{",
            r#"{"a":1} x"#,
            r#"{"a":1}{}"#,
            r#"{"a":1,}"#,
            r#"{"a":truX}"#,
            r#"{'a': 1}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":NaN}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12G4"}"#,
            r#"{"a":[1}"#,
            r#"{"a":{]}"#,
            r#"{"a" 1}"#,
            r#"{1:2}"#,
            r#"{"a":"x"#,
            r#"{"a":tru}"#,
        ];
        for t in yes {
            assert!(ObjectCheck::is_object(t), "{t:?} is one object");
        }
        for t in no {
            assert!(!ObjectCheck::is_object(t), "{t:?} is not one object");
        }
    }

    /// Any split gives the whole text's verdict.
    #[test]
    fn every_split_agrees() {
        let texts = [
            r#"{"a":[1,-2.5e+3,true,null,{"b":"\u00e9\"x"}],"c":10}"#,
            r#"{"a":12}x"#,
            r#"{"a":1.5e}"#,
            "{\"k\":\"日本\"}",
        ];
        for t in texts {
            let whole = ObjectCheck::is_object(t);
            for i in 0..=t.len() {
                for j in i..=t.len() {
                    if !(t.is_char_boundary(i) && t.is_char_boundary(j)) {
                        continue;
                    }
                    let mut c = ObjectCheck::new();
                    c.feed(&t[..i]);
                    c.feed(&t[i..j]);
                    c.feed(&t[j..]);
                    assert_eq!(c.finish(), whole, "{t:?} split at {i}, {j}");
                }
            }
        }
    }

    /// Nesting deeper than any fixed limit is checked in constant stack.
    #[test]
    fn deep_nesting() {
        let depth = 10_000;
        let t = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
        assert!(ObjectCheck::is_object(&t));
        let t = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth - 1));
        assert!(!ObjectCheck::is_object(&t));
    }
}
