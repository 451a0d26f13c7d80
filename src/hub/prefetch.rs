//! A hint to the CPU that memory is about to be read. A fleet of a million
//! is cold in cache and a pass over it (a window, the sweeper) waits on
//! every worker's allocations in turn; asking for the rows a few ahead lets
//! those waits overlap. A hint only: it reads nothing and never faults, so
//! any address is fine; on other architectures it does nothing.

/// Ask for the cache line at `p`.
#[inline(always)]
pub fn hint<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch reads nothing and never faults, whatever the
        // address; SSE is part of every x86_64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
