// ggml's CPU matrix-vector kernel timed the way memwall-bench-kernels times memwall's: one
// thread, a weight matrix of 4096 columns quantized with ggml's own quantizer, the activation
// row converted once to the format's dot type, then `vec_dot` over every row (ggml's plain,
// un-repacked layout: the kernel its mul_mat runs per row). Built and run by compare.py
// against the libggml of the llama-cpp-python build it compares with.
//
// Usage: ggml_gemv TYPE BYTES REPS   (TYPE as ggml names it: q4_0, q4_K, tq1_0, f16, ...)
// Prints one line: `TYPE BYTES GB/s CHECKSUM`, GB/s the best of REPS passes over the matrix.

#define _POSIX_C_SOURCE 199309L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-cpu.h"
#include "ggml.h"

#define COLS 4096
#define SEED_ROWS 64

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Sum of four uniforms on [-0.5, 0.5): cheap, roughly Gaussian weights (as the Rust bench).
static uint64_t state = 0x9E3779B97F4A7C15ull;
static float gauss(void) {
    float s = 0.0f;
    for (int i = 0; i < 4; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        s += (float)(state >> 40) / (float)(1u << 24) - 0.5f;
    }
    return s;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: ggml_gemv TYPE BYTES REPS\n");
        return 2;
    }
    enum ggml_type t = GGML_TYPE_COUNT;
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        const char *n = ggml_type_name((enum ggml_type)i);
        if (n && ggml_type_size((enum ggml_type)i) > 0 && strcmp(n, argv[1]) == 0) {
            t = (enum ggml_type)i;
        }
    }
    if (t == GGML_TYPE_COUNT) {
        fprintf(stderr, "ggml_gemv: unknown type `%s`\n", argv[1]);
        return 2;
    }
    if (ggml_quantize_requires_imatrix(t)) {
        fprintf(stderr, "ggml_gemv: `%s` needs an importance matrix\n", argv[1]);
        return 2;
    }
    long long bytes = atoll(argv[2]);
    int reps = atoi(argv[3]);
    if (bytes <= 0 || reps <= 0) {
        fprintf(stderr, "ggml_gemv: BYTES and REPS must be > 0\n");
        return 2;
    }
    ggml_cpu_init();
    const struct ggml_type_traits_cpu *tc = ggml_get_type_traits_cpu(t);
    if (!tc->vec_dot ||
        (tc->vec_dot_type != GGML_TYPE_F32 && !ggml_get_type_traits_cpu(tc->vec_dot_type)->from_float)) {
        fprintf(stderr, "ggml_gemv: `%s` has no CPU dot product\n", argv[1]);
        return 2;
    }
    size_t row = ggml_row_size(t, COLS);
    long long rows = bytes / (long long)row;
    if (rows < SEED_ROWS) rows = SEED_ROWS;

    float *src = malloc(sizeof(float) * SEED_ROWS * COLS);
    for (long i = 0; i < SEED_ROWS * COLS; i++) src[i] = gauss();
    char *seed = malloc(row * SEED_ROWS);
    ggml_quantize_chunk(t, src, seed, 0, SEED_ROWS, COLS, NULL);
    char *w = malloc(row * rows);
    for (long long r = 0; r < rows; r++) memcpy(w + r * row, seed + (r % SEED_ROWS) * row, row);

    float x[COLS];
    for (int i = 0; i < COLS; i++) x[i] = ((float)(i % 17) - 8.0f) / 8.0f;
    enum ggml_type vt = tc->vec_dot_type;
    char *xq = malloc(ggml_row_size(vt, COLS));
    if (vt == GGML_TYPE_F32) {
        memcpy(xq, x, sizeof x);
    } else {
        ggml_get_type_traits_cpu(vt)->from_float(x, xq, COLS);
    }
    float *y = malloc(sizeof(float) * rows);

    double best = 1e30;
    for (int k = 0; k <= reps; k++) {  // pass 0 warms the caches and the pages
        double t0 = now();
        for (long long r = 0; r < rows; r++) tc->vec_dot(COLS, &y[r], 0, w + r * row, 0, xq, 0, 1);
        double s = now() - t0;
        if (k > 0 && s < best) best = s;
    }
    double sink = 0;
    for (long long r = 0; r < rows; r++) sink += y[r];
    printf("%s %lld %.3f %g\n", argv[1], (long long)(row * rows), (double)(row * rows) / best / 1e9, sink);
    return 0;
}
