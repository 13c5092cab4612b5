/* Batch loops for the software engine: one call decodes (or encodes) a whole batch of
 * segments, so the GIL is released once per batch instead of once per segment.
 *
 * No codec code lives here. The caller (colony/codec/native.py, through ctypes) passes the
 * addresses of the codec libraries' own entry points - LZ4_decompress_safe,
 * ZSTD_decompressDCtx, libdeflate_*_decompress, LZ4_compress_fast, ZSTD_compressCCtx - and of
 * a CRC32C function (python-crc32c's hardware routine, checked against crc32c.crc32c at load
 * time), so this file needs no codec headers. Segment k reads src[k] (slen[k] bytes) and
 * writes dst[k] (at most cap[k] bytes); out[k] receives the bytes written.
 *
 * Return value: -1 when every segment succeeded, else the index of the first failing segment,
 * with *why set to FAIL_CRC (stored bytes do not match crc[k]), FAIL_CODEC (the library
 * refused the stream; *detail holds its error code) or FAIL_SPACE (output did not fit).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

enum { FAIL_CRC = 1, FAIL_CODEC = 2, FAIL_SPACE = 3 };
enum { LZ4 = 1, ZSTD = 2, DEFLATE = 3 };

typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);
typedef int (*lz4_dec_fn)(const char *, char *, int, int);
typedef int (*lz4_enc_fn)(const char *, char *, int, int, int);
typedef size_t (*zstd_dec_fn)(void *, void *, size_t, const void *, size_t);
typedef size_t (*zstd_enc_fn)(void *, void *, size_t, const void *, size_t, int);
typedef unsigned (*zstd_iserr_fn)(size_t);
typedef int (*defl_dec_fn)(void *, const void *, size_t, void *, size_t, size_t *);

typedef struct {
    int kind;
    void *decode;      /* lz4_dec_fn, zstd_dec_fn, or libdeflate_zlib_decompress */
    void *decode_raw;  /* libdeflate_deflate_decompress (raw DEFLATE) */
    void *encode;      /* lz4_enc_fn or zstd_enc_fn */
    void *is_error;    /* ZSTD_isError */
    void *crc;         /* crc_fn: crc32c(~0, p, n) ^ ~0 is the CRC32C of p[0..n) */
} colony_route;

static uint32_t crc32c_of(const colony_route *r, const void *p, size_t n) {
    return ~((crc_fn)r->crc)(0xFFFFFFFFu, (const unsigned char *)p, n);
}

static int zlib_wrapped(const unsigned char *p, size_t n) {
    return n >= 2 && (p[0] & 0x0F) == 8 && (((unsigned)p[0] << 8) | p[1]) % 31 == 0;
}

long colony_decode_batch(const colony_route *r, void *ctx, long n, const uint64_t *src, const uint64_t *slen,
                         const uint64_t *dst, const uint64_t *cap, const uint32_t *crc, int64_t *out,
                         int *why, int64_t *detail) {
    for (long k = 0; k < n; k++) {
        const void *s = (const void *)(uintptr_t)src[k];
        void *d = (void *)(uintptr_t)dst[k];
        if (crc && crc32c_of(r, s, slen[k]) != crc[k]) {
            *why = FAIL_CRC;
            return k;
        }
        if (r->kind == LZ4) {
            int got = ((lz4_dec_fn)r->decode)((const char *)s, (char *)d, (int)slen[k], (int)cap[k]);
            if (got < 0) { *why = FAIL_CODEC; *detail = got; return k; }
            out[k] = got;
        } else if (r->kind == ZSTD) {
            size_t got = ((zstd_dec_fn)r->decode)(ctx, d, cap[k], s, slen[k]);
            if (((zstd_iserr_fn)r->is_error)(got)) { *why = FAIL_CODEC; *detail = (int64_t)got; return k; }
            out[k] = (int64_t)got;
        } else {
            size_t got = 0;
            defl_dec_fn f = zlib_wrapped(s, slen[k]) ? (defl_dec_fn)r->decode : (defl_dec_fn)r->decode_raw;
            int rc = f(ctx, s, slen[k], d, cap[k], &got);
            if (rc) { *why = FAIL_CODEC; *detail = rc; return k; }
            out[k] = (int64_t)got;
        }
    }
    return -1;
}

long colony_encode_batch(const colony_route *r, void *ctx, int level, long n, const uint64_t *src,
                         const uint64_t *slen, const uint64_t *dst, const uint64_t *cap, int64_t *out,
                         uint32_t *out_crc, int *why, int64_t *detail) {
    for (long k = 0; k < n; k++) {
        const void *s = (const void *)(uintptr_t)src[k];
        void *d = (void *)(uintptr_t)dst[k];
        int64_t got;
        if (r->kind == LZ4) {
            got = ((lz4_enc_fn)r->encode)((const char *)s, (char *)d, (int)slen[k], (int)cap[k], level < 1 ? 1 : level);
            if (got <= 0) { *why = FAIL_SPACE; *detail = got; return k; }
        } else {
            size_t z = ((zstd_enc_fn)r->encode)(ctx, d, cap[k], s, slen[k], level);
            if (((zstd_iserr_fn)r->is_error)(z)) { *why = FAIL_CODEC; *detail = (int64_t)z; return k; }
            got = (int64_t)z;
        }
        out[k] = got;
        out_crc[k] = crc32c_of(r, d, (size_t)got);
    }
    return -1;
}

/* An importable (empty) module, so setuptools builds this as a regular extension. */
static struct PyModuleDef batch_module = {PyModuleDef_HEAD_INIT, "_batch",
                                          "C batch loops for colony.codec.native (loaded through ctypes).", -1, NULL};

PyMODINIT_FUNC PyInit__batch(void) { return PyModule_Create(&batch_module); }
