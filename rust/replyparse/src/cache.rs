//! The one discipline of the caches the engine keeps across requests: what requests
//! repeat (a model's parser choice, a tool set, a dialect derived from a chat template)
//! is computed once and shared, and the memory that takes stays bounded whatever the
//! requests hold.
//!
//! A [`Cache`] is bounded three ways: by entries, by bytes (each entry's key plus its
//! value's estimate), and per key (a key over the limit is answered, never kept). When
//! full, the least recently used entry goes. Lookups hash the key with a hash the
//! owner chooses (it may read part of a long key, so hashing stays cheap) and compare
//! the candidate's key in full, so a collision costs a comparison, never a wrong
//! answer. An answer that depends on the registry carries its generation
//! ([`crate::registry::generation`]): a newer generation empties the cache, and an
//! answer derived at an older one is not kept. An answer that does not depend on the
//! registry passes [`INDEPENDENT`] instead, so registrations leave it alone.
//!
//! Lookups happen when a parser is built, never per chunk: one mutex per cache, held
//! for a scan of at most [`Limits::entries`] hashes and one key comparison. A value is
//! cheap to clone (an `Arc`, a small answer), so nothing is built or dropped under it.

use std::sync::{Mutex, MutexGuard};

/// The generation of a cache whose answers do not depend on the registry (a dialect
/// derived from a chat template reads the template alone): passed to every `get` and
/// `put`, it never empties the cache. Registry generations start here and only grow,
/// so it is never mistaken for a newer one.
pub(crate) const INDEPENDENT: u64 = 0;

/// How much a [`Cache`] keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most entries.
    pub entries: usize,
    /// Most bytes of keys and values (as their owner estimates them).
    pub bytes: usize,
    /// A key longer than this is answered, not kept.
    pub key_bytes: usize,
}

/// What an entry holds, in bytes: its key (over [`Limits::key_bytes`] it is not kept)
/// and its value (an estimate).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    pub key: usize,
    pub value: usize,
}

/// What [`Cache::put`] did: the value already kept for the key (shared
/// instead of the one offered), and the entries evicted to make room.
pub(crate) struct Put<K, V> {
    pub shared: Option<V>,
    pub evicted: Vec<(K, V)>,
}

/// A bounded, least-recently-used cache of values by key (module docs).
pub(crate) struct Cache<K, V> {
    limits: Limits,
    inner: Mutex<Inner<K, V>>,
}

struct Inner<K, V> {
    generation: u64,
    entries: Vec<Entry<K, V>>,
    bytes: usize,
    clock: u64,
}

struct Entry<K, V> {
    hash: u64,
    key: K,
    value: V,
    bytes: usize,
    last_used: u64,
}

impl<K, V: Clone> Cache<K, V> {
    /// An empty cache kept within `limits`.
    pub const fn new(limits: Limits) -> Self {
        Cache {
            limits,
            inner: Mutex::new(Inner {
                generation: 0,
                entries: Vec::new(),
                bytes: 0,
                clock: 0,
            }),
        }
    }

    /// The data stays consistent if a panic unwinds while the lock is held (every
    /// update is one assignment, push or removal), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, Inner<K, V>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value kept for the key `is` recognises (whose hash is `hash`), if any, for
    /// `generation`. A hit counts as a use.
    pub fn get(&self, generation: u64, hash: u64, is: impl Fn(&K) -> bool) -> Option<V> {
        let mut c = self.lock();
        if c.generation != generation {
            return None;
        }
        c.clock += 1;
        let clock = c.clock;
        let e = c
            .entries
            .iter_mut()
            .find(|e| e.hash == hash && is(&e.key))?;
        e.last_used = clock;
        Some(e.value.clone())
    }

    /// Keeps `value` for the key `is` recognises (`key` builds it; `sizes` says what
    /// both hold), derived at `generation`. When another caller kept a value for the
    /// same key meanwhile, that one stays and is returned ([`Put::shared`]), so callers
    /// can share it. A key over the limit, an entry larger than the whole cache, or an
    /// answer of an older generation, is not kept.
    ///
    /// The entries evicted to make room are returned too ([`Put::evicted`]), for an
    /// owner that must undo something when a value goes (a derived dialect is
    /// unregistered), and so that they (maybe the last reference to a large value) are
    /// dropped after the lock is released. Entries a newer generation empties are not
    /// returned: such an owner passes [`INDEPENDENT`].
    pub fn put(
        &self,
        generation: u64,
        hash: u64,
        is: impl Fn(&K) -> bool,
        key: impl FnOnce() -> K,
        value: &V,
        sizes: Sizes,
    ) -> Put<K, V> {
        let limits = self.limits;
        let mut out = Put {
            shared: None,
            evicted: Vec::new(),
        };
        let bytes = sizes.key + sizes.value;
        let mut c = self.lock();
        if sizes.key > limits.key_bytes || bytes > limits.bytes || generation < c.generation {
            return out;
        }
        if generation != c.generation {
            // Answers of an older registry: a dialect was registered since.
            c.entries.clear();
            c.bytes = 0;
            c.generation = generation;
        }
        c.clock += 1;
        let clock = c.clock;
        if let Some(e) = c.entries.iter_mut().find(|e| e.hash == hash && is(&e.key)) {
            e.last_used = clock;
            out.shared = Some(e.value.clone());
            return out;
        }
        while !c.entries.is_empty()
            && (c.entries.len() >= limits.entries || c.bytes + bytes > limits.bytes)
        {
            let (oldest, _) = c
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
                .expect("not empty");
            let e = c.entries.swap_remove(oldest);
            c.bytes -= e.bytes;
            out.evicted.push((e.key, e.value));
        }
        c.bytes += bytes;
        c.entries.push(Entry {
            hash,
            key: key(),
            value: value.clone(),
            bytes,
            last_used: clock,
        });
        out
    }

    /// Entries and bytes kept now.
    pub fn size(&self) -> (usize, usize) {
        let c = self.lock();
        (c.entries.len(), c.bytes)
    }
}

/// A hash of `bytes` that reads at most about 1 KiB of them: the length, the two ends
/// and words at a stride between, so hashing a long key costs the same as a short one
/// (the cache compares the whole key on a match).
pub(crate) fn sampled_hash(bytes: &[u8]) -> u64 {
    const END: usize = 256;
    const SAMPLES: usize = 64;
    let mut h = Fx(bytes.len() as u64);
    if bytes.len() <= 2 * END + SAMPLES * 8 {
        h.bytes(bytes);
        return h.0;
    }
    h.bytes(&bytes[..END]);
    h.bytes(&bytes[bytes.len() - END..]);
    let middle = &bytes[END..bytes.len() - END];
    let stride = middle.len() / SAMPLES;
    for i in 0..SAMPLES {
        let at = i * stride;
        h.bytes(&middle[at..at + 8]);
    }
    h.0
}

/// A word-at-a-time multiplicative hash (FxHash's step): fast, and good enough where a
/// collision only costs a comparison.
struct Fx(u64);

impl Fx {
    fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn bytes(&mut self, b: &[u8]) {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        self.word(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits {
        entries: 4,
        bytes: 100,
        key_bytes: 40,
    };

    fn put(c: &Cache<String, u32>, generation: u64, key: &str, value: u32, bytes: usize) {
        let hash = sampled_hash(key.as_bytes());
        let sizes = Sizes {
            key: key.len(),
            value: bytes,
        };
        c.put(
            generation,
            hash,
            |k| k == key,
            || key.to_owned(),
            &value,
            sizes,
        );
    }

    fn get(c: &Cache<String, u32>, generation: u64, key: &str) -> Option<u32> {
        c.get(generation, sampled_hash(key.as_bytes()), |k| k == key)
    }

    #[test]
    fn bounded_by_entries_and_bytes_keeping_what_is_used() {
        let c = Cache::new(SMALL);
        for i in 0..20 {
            put(&c, 0, &format!("k{i}"), i, 10);
            assert_eq!(get(&c, 0, "k0"), Some(0), "the key in use stays");
            let (n, bytes) = c.size();
            assert!(n <= SMALL.entries && bytes <= SMALL.bytes, "{n} {bytes}");
        }
        assert_eq!(get(&c, 0, "k1"), None, "the least recently used went");
        put(&c, 0, "big", 99, 95);
        assert_eq!(get(&c, 0, "big"), Some(99));
        assert_eq!(c.size().0, 1, "room was made by bytes");
        assert_eq!(get(&c, 0, "k0"), None);
    }

    #[test]
    fn a_key_over_the_limit_is_not_kept() {
        let c = Cache::new(SMALL);
        let long = "x".repeat(SMALL.key_bytes + 1);
        put(&c, 0, &long, 1, 0);
        assert_eq!(get(&c, 0, &long), None);
    }

    #[test]
    fn an_entry_larger_than_the_cache_is_not_kept_and_evicts_nothing() {
        let c = Cache::new(SMALL);
        put(&c, 0, "a", 1, 10);
        put(&c, 0, "huge", 2, SMALL.bytes);
        assert_eq!(get(&c, 0, "huge"), None);
        assert_eq!(get(&c, 0, "a"), Some(1));
    }

    #[test]
    fn evicted_entries_are_handed_back() {
        let c = Cache::new(SMALL);
        for i in 0..SMALL.entries as u32 {
            put(&c, INDEPENDENT, &format!("k{i}"), i, 10);
        }
        let key = "new".to_owned();
        let sizes = Sizes { key: 3, value: 10 };
        let hash = sampled_hash(key.as_bytes());
        let out = c.put(INDEPENDENT, hash, |k| *k == key, || key.clone(), &9, sizes);
        assert!(out.shared.is_none());
        assert_eq!(
            out.evicted,
            [("k0".to_owned(), 0)],
            "the least recently used"
        );
    }

    #[test]
    fn the_first_value_kept_for_a_key_is_the_one_shared() {
        let c = Cache::new(SMALL);
        let hash = sampled_hash(b"k");
        let sizes = Sizes { key: 1, value: 0 };
        let keep = |v: u32| {
            c.put(0, hash, |k: &String| k == "k", || "k".into(), &v, sizes)
                .shared
        };
        assert_eq!(keep(1), None);
        assert_eq!(keep(2), Some(1));
        assert_eq!(get(&c, 0, "k"), Some(1));
    }

    #[test]
    fn a_newer_generation_empties_it_and_an_older_answer_is_not_kept() {
        let c = Cache::new(SMALL);
        put(&c, 1, "a", 1, 0);
        assert_eq!(get(&c, 2, "a"), None);
        put(&c, 2, "b", 2, 0);
        assert_eq!(get(&c, 2, "a"), None);
        put(&c, 1, "c", 3, 0);
        assert_eq!(get(&c, 2, "c"), None);
        assert_eq!(get(&c, 2, "b"), Some(2));
    }

    #[test]
    fn collisions_compare_whole_keys() {
        // Same length, same ends and samples: the middle differs where no sample reads.
        let pad = "x".repeat(4000);
        let (a, b) = (format!("{pad}a{pad}"), format!("{pad}b{pad}"));
        let c = Cache::new(Limits {
            entries: 4,
            bytes: 1 << 20,
            key_bytes: 1 << 20,
        });
        if sampled_hash(a.as_bytes()) == sampled_hash(b.as_bytes()) {
            put(&c, 0, &a, 1, 0);
            assert_eq!(get(&c, 0, &b), None);
        }
        put(&c, 0, &b, 2, 0);
        assert_eq!(get(&c, 0, &b), Some(2));
    }

    #[test]
    fn the_hash_reads_short_keys_whole() {
        assert_ne!(sampled_hash(b"abc"), sampled_hash(b"abd"));
        assert_ne!(sampled_hash(b"ab"), sampled_hash(b"ab\0"));
        assert_ne!(sampled_hash(&[0; 7]), sampled_hash(&[0; 8]));
    }
}
