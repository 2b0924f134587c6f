//! The one lock helper of the workspace: a poisoned lock is taken anyway.
//! A panic in a job or an export is caught and becomes an `INTERNAL` error
//! of that op or call; the state a lock protects is kept consistent by each
//! critical section (none panics half-way through an update it relies on),
//! so the next user can go on instead of failing forever.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};
use std::time::{Duration, Instant};

/// Locks `m`, ignoring poisoning.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long [`lock_brief`] keeps trying before it blocks.
const BRIEF_SPIN: Duration = Duration::from_micros(3);

/// Locks `m`, a lock whose holders keep it for about a microsecond and that
/// threads on different cores take in turn (a scheduler's ordering state:
/// a submitter and the lanes completing its ops). It keeps trying for a few
/// microseconds before it blocks, where std's mutex blocks after about a
/// hundred spins: blocking costs a futex wait here and a futex wake in the
/// holder's unlock, several microseconds each on a virtual machine, which
/// is longer than the wait it avoids.
pub fn lock_brief<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    let mut started = None;
    loop {
        match m.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(e)) => return e.into_inner(),
            Err(TryLockError::WouldBlock) => {}
        }
        let since = *started.get_or_insert_with(Instant::now);
        if since.elapsed() >= BRIEF_SPIN {
            return lock(m);
        }
        for _ in 0..32 {
            std::hint::spin_loop();
        }
    }
}

/// Locks `m` if it is free, ignoring poisoning.
pub fn try_lock<T: ?Sized>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Read-locks `l`, ignoring poisoning.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Write-locks `l`, ignoring poisoning.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_taken_anyway() {
        let m = Mutex::new(1);
        let l = RwLock::new(2);
        let _ = std::panic::catch_unwind(|| {
            let _g = m.lock().unwrap();
            let _w = l.write().unwrap();
            panic!("poison both");
        });
        assert!(m.is_poisoned() && l.is_poisoned());
        *lock(&m) += 1;
        *lock_brief(&m) += 1;
        *write(&l) += 1;
        assert_eq!((*lock(&m), *read(&l)), (3, 3));
    }

    #[test]
    fn lock_brief_waits_past_its_spin_for_a_long_holder_and_excludes() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let m = Arc::new(Mutex::new(0u64));
        let held = Arc::new(AtomicBool::new(false));
        let holder = {
            let (m, held) = (m.clone(), held.clone());
            std::thread::spawn(move || {
                let mut g = lock(&m);
                held.store(true, Ordering::SeqCst);
                // Far longer than the spin: the waiter must block, then get it.
                std::thread::sleep(Duration::from_millis(30));
                *g = 7;
            })
        };
        while !held.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        assert_eq!(*lock_brief(&m), 7, "lock_brief returned before the holder released");
        holder.join().unwrap();
        // Many threads incrementing through it lose no update.
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || (0..10_000).for_each(|_| *lock_brief(&m) += 1))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*lock(&m), 40_007);
    }
}
