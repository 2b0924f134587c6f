// Row kernels of the CUDA backend: CUDA C compiled to PTX by clang-14, with no
// CUDA toolkit and no CUDA headers (hence the attribute spellings and the
// __nvvm builtins). Regenerate rows.ptx with `cargo xtask codegen`; the
// kernel table, launch geometry, argument meanings and a CPU reference of
// every kernel are in ../kernels.rs.
//
// Conventions shared by every row kernel:
// - A row is `units_per_row` units of 1, 4, 8 or 16 bytes (the host picks the
//   widest unit dividing the row width, the strides and the base addresses),
//   so one kernel body serves every row width and moves 16-byte units where
//   it can.
// - Strides are in units. Row offsets are row * stride in 64 bits: a row index
//   times a stride can pass 2^32 units even when a launch has fewer units.
// - The unit index of a launch is 32-bit (32-bit division is much cheaper
//   than 64-bit division on the GPU): the host splits launches so that
//   rows * units_per_row <= 2^31, so `t + grid stride` cannot wrap either.
// - Grid-stride loops: the host caps the grid at SMs x 16 blocks of 256
//   threads and any launch size is still covered.
// - Consecutive threads take consecutive units of a row, so warps coalesce.

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
// Two u64 lanes: loads and stores of it are single 16-byte accesses
// (ld/st.global.v2.u64).
typedef unsigned long long u128 __attribute__((ext_vector_type(2)));

#define GLOBAL extern "C" __attribute__((global))
#define DEVICE static __attribute__((device)) __attribute__((always_inline)) inline

// Read-only loads through the non-coherent cache (what __ldg does): every
// buffer a kernel reads is not written by that kernel.
DEVICE u8 ldg(const u8 *p) { return __nvvm_ldg_uc(p); }
DEVICE u32 ldg(const u32 *p) { return __nvvm_ldg_ui(p); }
DEVICE u64 ldg(const u64 *p) { return __nvvm_ldg_ull(p); }
DEVICE u128 ldg(const u128 *p) { return __nvvm_ldg_ull2(p); }

DEVICE u32 first_thread() { return __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x(); }
DEVICE u32 all_threads() { return __nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x(); }

// dst row i <- src row idx[i], for i < rows.
template <typename T>
DEVICE void gather_rows(T *dst, const T *src, const u64 *idx, u32 rows, u32 units_per_row, u64 src_stride,
                        u64 dst_stride) {
    u32 total = rows * units_per_row;
    for (u32 t = first_thread(); t < total; t += all_threads()) {
        u32 row = t / units_per_row;
        u32 col = t - row * units_per_row;
        dst[(u64)row * dst_stride + col] = ldg(src + ldg(idx + row) * src_stride + col);
    }
}

// dst row idx[i] <- src row i, for i < rows. The targets are distinct (the
// host folds duplicates first), so no two threads write one unit.
template <typename T>
DEVICE void scatter_rows(T *dst, const T *src, const u64 *idx, u32 rows, u32 units_per_row, u64 src_stride,
                         u64 dst_stride) {
    u32 total = rows * units_per_row;
    for (u32 t = first_thread(); t < total; t += all_threads()) {
        u32 row = t / units_per_row;
        u32 col = t - row * units_per_row;
        dst[ldg(idx + row) * dst_stride + col] = ldg(src + (u64)row * src_stride + col);
    }
}

// dst row rank(i) <- src row i for each i < rows whose bit (mask[i / 64] bit
// i % 64) is set. rank(i) = prefix[i / 64] (set bits in the words before, a
// host-computed exclusive prefix) + the set bits below i in its word: each
// thread finds its rank alone, so no device scan and no second pass.
template <typename T>
DEVICE void masked_compact(T *dst, const T *src, const u64 *mask, const u32 *prefix, u32 rows, u32 units_per_row,
                           u64 src_stride, u64 dst_stride) {
    u32 total = rows * units_per_row;
    for (u32 t = first_thread(); t < total; t += all_threads()) {
        u32 row = t / units_per_row;
        u32 col = t - row * units_per_row;
        u64 word = ldg(mask + row / 64);
        u64 bit = 1ull << (row % 64);
        if (word & bit) {
            u32 rank = ldg(prefix + row / 64) + __builtin_popcountll(word & (bit - 1));
            dst[(u64)rank * dst_stride + col] = ldg(src + (u64)row * src_stride + col);
        }
    }
}

// Every dst row i < rows <- the one pattern row (broadcast; zeroing).
template <typename T>
DEVICE void fill_rows(T *dst, const T *pattern, u32 rows, u32 units_per_row, u64 dst_stride) {
    u32 total = rows * units_per_row;
    for (u32 t = first_thread(); t < total; t += all_threads()) {
        u32 row = t / units_per_row;
        u32 col = t - row * units_per_row;
        dst[(u64)row * dst_stride + col] = ldg(pattern + col);
    }
}

// Compact dst rows (dst row stride = units_per_row, so unit t of the launch
// is dst[t]) <- src rows src_stride units apart (a 1-D strided source).
template <typename T>
DEVICE void strided_rows(T *dst, const T *src, u32 rows, u32 units_per_row, u64 src_stride) {
    u32 total = rows * units_per_row;
    for (u32 t = first_thread(); t < total; t += all_threads()) {
        u32 row = t / units_per_row;
        u32 col = t - row * units_per_row;
        dst[t] = ldg(src + (u64)row * src_stride + col);
    }
}

// One entry point per (kernel, unit): PTX has no templates, and the host
// table (kernels.rs) names these.
#define ROW_KERNELS(T)                                                                                               \
    GLOBAL void gather_rows_##T(T *dst, const T *src, const u64 *idx, u32 rows, u32 units_per_row, u64 src_stride,  \
                                u64 dst_stride) {                                                                    \
        gather_rows(dst, src, idx, rows, units_per_row, src_stride, dst_stride);                                     \
    }                                                                                                                \
    GLOBAL void scatter_rows_##T(T *dst, const T *src, const u64 *idx, u32 rows, u32 units_per_row, u64 src_stride, \
                                 u64 dst_stride) {                                                                   \
        scatter_rows(dst, src, idx, rows, units_per_row, src_stride, dst_stride);                                    \
    }                                                                                                                \
    GLOBAL void masked_compact_##T(T *dst, const T *src, const u64 *mask, const u32 *prefix, u32 rows,              \
                                   u32 units_per_row, u64 src_stride, u64 dst_stride) {                              \
        masked_compact(dst, src, mask, prefix, rows, units_per_row, src_stride, dst_stride);                         \
    }                                                                                                                \
    GLOBAL void fill_rows_##T(T *dst, const T *pattern, u32 rows, u32 units_per_row, u64 dst_stride) {               \
        fill_rows(dst, pattern, rows, units_per_row, dst_stride);                                                    \
    }                                                                                                                \
    GLOBAL void strided_rows_##T(T *dst, const T *src, u32 rows, u32 units_per_row, u64 src_stride) {               \
        strided_rows(dst, src, rows, units_per_row, src_stride);                                                     \
    }

ROW_KERNELS(u8)
ROW_KERNELS(u32)
ROW_KERNELS(u64)
ROW_KERNELS(u128)

// Ragged rows: row r's lens[r] bytes at device address srcs[r] -> dst +
// offs[r], for r < rows. Rows differ in length and alignment, so the unit is
// a byte; one block per row (blocks stride over rows) keeps a row's bytes in
// one block's coalesced sweep. Byte offsets are 64-bit: one row may be long.
GLOBAL void copy_ranges(u8 *dst, const u64 *srcs, const u64 *lens, const u64 *offs, u32 rows) {
    for (u32 r = __nvvm_read_ptx_sreg_ctaid_x(); r < rows; r += __nvvm_read_ptx_sreg_nctaid_x()) {
        const u8 *src = (const u8 *)ldg(srcs + r);
        u8 *out = dst + ldg(offs + r);
        u64 len = ldg(lens + r);
        for (u64 b = __nvvm_read_ptx_sreg_tid_x(); b < len; b += __nvvm_read_ptx_sreg_ntid_x()) {
            out[b] = ldg(src + b);
        }
    }
}

// Test helper: holds its stream for `ns` nanoseconds, then writes `value` to
// *out, so that ordering tests do not depend on timing luck (a consumer that
// does not wait on this stream sees the old value). Launch with one thread.
// %globaltimer is the GPU's nanosecond clock; the asm is volatile so that
// every iteration reads it anew.
DEVICE u64 global_timer() {
    u64 now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    return now;
}

GLOBAL void spin_ns(u64 ns, u32 *out, u32 value) {
    u64 start = global_timer();
    while (global_timer() - start < ns) {
    }
    *out = value;
}
