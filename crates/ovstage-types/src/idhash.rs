//! A hasher for maps keyed by the stage's own small integer ids (tokens,
//! op ids): one multiply instead of SipHash. The keys come from our own
//! counters, not from untrusted input, so flooding resistance buys nothing.

use std::hash::{BuildHasherDefault, Hasher};

/// Hashes one integer by a multiply with an odd constant (Fibonacci
/// hashing); the high bits, which hashbrown uses, mix every input bit.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// `HashMap<K, V, IdBuild>`: a map keyed by ids.
pub type IdBuild = BuildHasherDefault<IdHasher>;

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn maps_keyed_by_ids_work() {
        let mut m: HashMap<u64, u64, IdBuild> = HashMap::default();
        for i in 0..1000u64 {
            m.insert(i * 64, i);
        }
        assert!((0..1000u64).all(|i| m[&(i * 64)] == i));
        assert_eq!(m.get(&1), None);
    }
}
