/* The driver calls of a replay, made for real on the GPU: what the virtual heap's mappings and PyTorch's segments
 * cost in CUDA driver time on the same trace (docs/BENCHMARKS.md, "Twenty-ninth session"). Driver API only; build
 * and run on the GPU machine:
 *
 *   gcc -O2 -std=c11 benches/cuda/driver_replay.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda \
 *       -o driver_replay
 *   ./driver_replay heap [--page-size BYTES] LOG...   # placement logs of `memcarve replay --placements`
 *   ./driver_replay segments CSV...                   # PyTorch's segment operations (`scripts/pytorch_segments.py`)
 *
 * heap: every `map` line of the log (with the `pages` lines after it) becomes one handle per physical page not
 * alive yet (`cuMemCreate`), one `cuMemMap` per page, and one `cuMemSetAccess` over the mapped range; every
 * `unmap` line one `cuMemUnmap` over its range and a `cuMemRelease` for each physical page left mapped nowhere.
 * One handle per page is what CUDA allows this heap: `cuMemMap` maps a handle only whole, so a page shown alone at
 * another address, or freed alone, must be a handle of its own (`scripts/check_placements.py --handles` prices the
 * same work). Allocation and free lines make no driver call and are skipped. A `tier` line (a heap in tiers)
 * says that from its offset on pages are of its size: physical page ids of tier k are numbered from k << 28, and
 * their handles are of that tier's page size.
 * segments: `segment_alloc` / `segment_free` lines become `cuMemAlloc` / `cuMemFree` (what PyTorch's caching
 * allocator calls through cudaMalloc / cudaFree); `segment_map` / `segment_unmap` (expandable segments) become one
 * handle of the line's size created, mapped and given access in a reserved range, and unmapped and released.
 *
 * Each operation is timed as a whole (clock_gettime around its calls), and its calls by kind. Prints one line per
 * file: operations, handles created and released, pages mapped and unmapped, mappings made, the time of the file's
 * operations, and the time by call; then the pages still mapped are unmapped and their handles released, timed
 * apart (teardown, not counted: PyTorch's side frees its live segments there too). The last line sums all files.
 * benches/cuda/stub holds a stand-in driver to build and test it without a GPU (scripts/test_driver_replay.py). */
#define _POSIX_C_SOURCE 199309L
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_memory.h"

/* The heap's page size: 2 MiB (the device's granularity), or `--page-size BYTES` for logs of a heap configured
 * with larger pages. */
static unsigned long long page_size = 2ull << 20;

/* The tiers a log's `tier` lines open (at most 15 past the first): start and page size. Physical page ids of tier
 * k are numbered from k << TIER_ID_SHIFT, as `memcarve replay --placements` writes them. */
#define TIER_ID_SHIFT 28
#define MAX_TIERS 16
static unsigned long long tier_start[MAX_TIERS], tier_page[MAX_TIERS];
static int tiers = 1;

/* The page size at address offset `offset`. */
static unsigned long long page_at(unsigned long long offset) {
    int k = tiers - 1;
    while (k > 0 && offset < tier_start[k]) k--;
    return tier_page[k];
}

enum { T_CREATE, T_MAP, T_ACCESS, T_UNMAP, T_RELEASE, T_ALLOC, T_FREE, T_KINDS };
static const char *kind_names[T_KINDS] = {"create", "map", "access", "unmap", "release", "alloc", "free"};

static void check(CUresult result, const char *what, const char *file, long line) {
    if (result != CUDA_SUCCESS) {
        const char *name = NULL;
        cuGetErrorName(result, &name);
        fprintf(stderr, "%s: line %ld: %s failed: %s\n", file, line, what, name ? name : "?");
        exit(1);
    }
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static CUmemAllocationProp prop;
static CUmemAccessDesc access_desc;

/* What one file's replay did and took. */
struct tally {
    long ops, created, released, mapped, unmapped, mappings;
    double op_us, by_kind_us[T_KINDS], teardown_us;
};

static struct tally total;

/* Times one call of kind `kind`, checking its result. */
#define TIMED(tally, kind, call, what)                                                                            \
    do {                                                                                                           \
        double start_ = now_us();                                                                                  \
        CUresult result_ = (call);                                                                                 \
        (tally)->by_kind_us[kind] += now_us() - start_;                                                            \
        check(result_, what, file, line_no);                                                                       \
    } while (0)

static void print_tally(const char *name, const char *mode, const struct tally *t) {
    printf("%s %s ops %ld created %ld released %ld mapped %ld unmapped %ld mappings %ld time_ms %.3f", name, mode,
           t->ops, t->created, t->released, t->mapped, t->unmapped, t->mappings, t->op_us / 1e3);
    for (int k = 0; k < T_KINDS; k++) {
        if (t->by_kind_us[k] > 0) printf(" %s_ms %.3f", kind_names[k], t->by_kind_us[k] / 1e3);
    }
    printf(" teardown_ms %.3f\n", t->teardown_us / 1e3);
    fflush(stdout);
}

static void add(struct tally *into, const struct tally *t) {
    into->ops += t->ops;
    into->created += t->created;
    into->released += t->released;
    into->mapped += t->mapped;
    into->unmapped += t->unmapped;
    into->mappings += t->mappings;
    into->op_us += t->op_us;
    into->teardown_us += t->teardown_us;
    for (int k = 0; k < T_KINDS; k++) into->by_kind_us[k] += t->by_kind_us[k];
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void *allocate_or_die(size_t count, size_t size) {
    void *memory = calloc(count ? count : 1, size);
    if (!memory) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    return memory;
}

/* Where each tier's physical page ids start in the replay's tables (tier k's id i at id_base[k] + i). */
static size_t id_base[MAX_TIERS];

static size_t id_index(unsigned long long id) {
    return id_base[id >> TIER_ID_SHIFT] + (size_t)(id & ((1ull << TIER_ID_SHIFT) - 1));
}

/* Opens a placement log and reads it once: its tiers, the address pages its mappings reach (in units of the first
 * tier's page) and the physical page ids it names per tier, so that the replay can size its tables (`ids`: all
 * tiers' ids). */
static FILE *scan_log(const char *file, size_t *pages, size_t *ids) {
    FILE *in = fopen(file, "r");
    if (!in) {
        perror(file);
        exit(1);
    }
    char text[256];
    unsigned long long a, b, c, end = 0, id_end[MAX_TIERS] = {0};
    tiers = 1;
    tier_start[0] = 0;
    tier_page[0] = page_size;
    while (fgets(text, sizeof text, in)) {
        if (sscanf(text, "map,,%llu,%llu", &a, &b) == 2 || sscanf(text, "unmap,,%llu,%llu", &a, &b) == 2) {
            if (a + b > end) end = a + b;
        } else if (sscanf(text, "pages,%llu,%llu,%llu", &a, &b, &c) == 3) {
            unsigned long long k = a >> TIER_ID_SHIFT, local = a & ((1ull << TIER_ID_SHIFT) - 1);
            if (k >= MAX_TIERS) {
                fprintf(stderr, "%s: physical page %llu of tier %llu: too many tiers\n", file, a, k);
                exit(1);
            }
            if (local + c > id_end[k]) id_end[k] = local + c;
        } else if (sscanf(text, "tier,%llu,%llu,%llu", &a, &b, &c) == 3) {
            if (a != (unsigned long long)tiers || a >= MAX_TIERS || c <= tier_page[tiers - 1] || b % c != 0) {
                fprintf(stderr, "%s: tier line %s", file, text);
                exit(1);
            }
            tier_start[tiers] = b;
            tier_page[tiers] = c;
            tiers++;
        }
    }
    rewind(in);
    size_t all = 0;
    for (int k = 0; k < MAX_TIERS; k++) {
        id_base[k] = all;
        all += (size_t)id_end[k];
    }
    *pages = (size_t)((end + page_size - 1) / page_size);
    *ids = all;
    return in;
}

/* One placement log with one handle per physical page. */
static void replay_heap(const char *file) {
    size_t pages, ids;
    FILE *in = scan_log(file, &pages, &ids);
    char text[256], event[16];
    unsigned long long a, b, c;
    struct tally t = {0};
    if (pages == 0) {
        fclose(in);
        print_tally(base_name(file), "heap", &t);
        return;
    }
    CUmemGenericAllocationHandle *handles = allocate_or_die(ids, sizeof *handles);
    uint32_t *mappings = allocate_or_die(ids, sizeof *mappings);
    int64_t *shown = allocate_or_die(pages, sizeof *shown); /* per address page: the physical page id, or -1 */
    for (size_t i = 0; i < pages; i++) shown[i] = -1;
    CUdeviceptr base = 0;
    long line_no = 0;
    /* Aligned to the largest page, so that every tier's pages lie on their own size's boundary. */
    check(cuMemAddressReserve(&base, pages * page_size, tier_page[tiers - 1], 0, 0), "cuMemAddressReserve", file,
          line_no);
    /* A map waits for its pages lines: it is made when the next other line (or the end) comes. */
    unsigned long long map_offset = 0, map_size = 0;
    int pending = 0;
    double op_start = 0;
    for (;;) {
        int more = fgets(text, sizeof text, in) != NULL;
        line_no++;
        int is_pages = more && sscanf(text, "pages,%llu,%llu,%llu", &a, &b, &c) == 3;
        if (is_pages) {
            if (!pending) {
                fprintf(stderr, "%s: line %ld: pages without a map\n", file, line_no);
                exit(1);
            }
            unsigned long long size = page_at(b);
            for (unsigned long long k = 0; k < c; k++) {
                unsigned long long offset = b + k * size;
                size_t id = id_index(a + k);
                if (tier_page[(a + k) >> TIER_ID_SHIFT] != size) {
                    fprintf(stderr, "%s: line %ld: a physical page shown in pages of another size\n", file, line_no);
                    exit(1);
                }
                if (handles[id] == 0) {
                    TIMED(&t, T_CREATE, cuMemCreate(&handles[id], size, &prop, 0), "cuMemCreate");
                    t.created++;
                }
                TIMED(&t, T_MAP, cuMemMap(base + offset, size, 0, handles[id], 0), "cuMemMap");
                t.mappings++;
                mappings[id]++;
                shown[offset / page_size] = (int64_t)id;
                t.mapped++;
            }
            continue;
        }
        if (pending) {
            TIMED(&t, T_ACCESS, cuMemSetAccess(base + map_offset, map_size, &access_desc, 1), "cuMemSetAccess");
            t.op_us += now_us() - op_start;
            t.ops++;
            pending = 0;
        }
        if (!more) break;
        if (sscanf(text, "%15[a-z],", event) != 1) continue;
        if (strcmp(event, "map") == 0 && sscanf(text, "map,,%llu,%llu", &a, &b) == 2) {
            map_offset = a;
            map_size = b;
            pending = 1;
            op_start = now_us();
        } else if (strcmp(event, "unmap") == 0 && sscanf(text, "unmap,,%llu,%llu", &a, &b) == 2) {
            double start = now_us();
            TIMED(&t, T_UNMAP, cuMemUnmap(base + a, b), "cuMemUnmap");
            for (unsigned long long offset = a; offset < a + b; offset += page_at(offset)) {
                int64_t id = shown[offset / page_size];
                if (id < 0) {
                    fprintf(stderr, "%s: line %ld: unmap of a page not mapped\n", file, line_no);
                    exit(1);
                }
                shown[offset / page_size] = -1;
                t.unmapped++;
                if (--mappings[id] == 0) {
                    TIMED(&t, T_RELEASE, cuMemRelease(handles[id]), "cuMemRelease");
                    handles[id] = 0;
                    t.released++;
                }
            }
            t.op_us += now_us() - start;
            t.ops++;
        }
    }
    fclose(in);
    /* Teardown: every page still mapped, a page at a time, then the reservation. */
    double start = now_us();
    for (size_t page = 0; page < pages; page++) {
        int64_t id = shown[page];
        if (id < 0) continue;
        unsigned long long offset = page * page_size;
        check(cuMemUnmap(base + offset, page_at(offset)), "cuMemUnmap (teardown)", file, line_no);
        if (--mappings[id] == 0) check(cuMemRelease(handles[id]), "cuMemRelease (teardown)", file, line_no);
    }
    check(cuMemAddressFree(base, pages * page_size), "cuMemAddressFree", file, line_no);
    t.teardown_us = now_us() - start;
    free(handles);
    free(mappings);
    free(shown);
    print_tally(base_name(file), "heap", &t);
    add(&total, &t);
}

/* A live PyTorch segment: its address in the trace and ours. */
struct segment {
    unsigned long long addr, size;
    CUdeviceptr ptr;
    CUmemGenericAllocationHandle handle; /* expandable segments only */
};

/* One file of PyTorch's segment operations (`kind,addr,size` lines). */
static void replay_segments(const char *file) {
    FILE *in = fopen(file, "r");
    if (!in) {
        perror(file);
        exit(1);
    }
    char text[256], kind[32];
    unsigned long long addr, size, low = ~0ull, high = 0;
    long count = 0;
    while (fgets(text, sizeof text, in)) {
        if (sscanf(text, "%31[a-z_],%llu,%llu", kind, &addr, &size) != 3) continue;
        count++;
        if (strncmp(kind, "segment_map", 11) == 0) {
            if (addr < low) low = addr;
            if (addr + size > high) high = addr + size;
        }
    }
    struct segment *live = allocate_or_die((size_t)count, sizeof *live);
    long live_count = 0, line_no = 0;
    CUdeviceptr base = 0;
    unsigned long long span = 0;
    if (high > low) {
        /* Expandable segments map into ranges reserved ahead; one range covering them all stands for those. */
        low -= low % page_size;
        span = (high - low + page_size - 1) / page_size * page_size;
        check(cuMemAddressReserve(&base, span, 0, 0, 0), "cuMemAddressReserve", file, line_no);
    }
    struct tally t = {0};
    rewind(in);
    while (fgets(text, sizeof text, in)) {
        line_no++;
        if (sscanf(text, "%31[a-z_],%llu,%llu", kind, &addr, &size) != 3) continue;
        double start = now_us();
        if (strcmp(kind, "segment_alloc") == 0) {
            struct segment *s = &live[live_count++];
            s->addr = addr;
            s->size = size;
            TIMED(&t, T_ALLOC, cuMemAlloc(&s->ptr, size), "cuMemAlloc");
            t.created++;
        } else if (strcmp(kind, "segment_map") == 0) {
            struct segment *s = &live[live_count++];
            s->addr = addr;
            s->size = size;
            s->ptr = base + (addr - low);
            TIMED(&t, T_CREATE, cuMemCreate(&s->handle, size, &prop, 0), "cuMemCreate");
            TIMED(&t, T_MAP, cuMemMap(s->ptr, size, 0, s->handle, 0), "cuMemMap");
            t.mappings++;
            TIMED(&t, T_ACCESS, cuMemSetAccess(s->ptr, size, &access_desc, 1), "cuMemSetAccess");
            t.created++;
            t.mapped += size / page_size;
        } else if (strcmp(kind, "segment_free") == 0 || strcmp(kind, "segment_unmap") == 0) {
            long found = -1;
            for (long i = 0; i < live_count; i++) {
                if (live[i].addr == addr && live[i].size == size) found = i;
            }
            if (found < 0) {
                /* Released by the trace but reserved before it began: nothing of ours to free. */
                continue;
            }
            struct segment s = live[found];
            live[found] = live[--live_count];
            if (s.handle) {
                TIMED(&t, T_UNMAP, cuMemUnmap(s.ptr, s.size), "cuMemUnmap");
                TIMED(&t, T_RELEASE, cuMemRelease(s.handle), "cuMemRelease");
                t.unmapped += s.size / page_size;
            } else {
                TIMED(&t, T_FREE, cuMemFree(s.ptr), "cuMemFree");
            }
            t.released++;
        } else {
            continue;
        }
        t.op_us += now_us() - start;
        t.ops++;
    }
    fclose(in);
    double start = now_us();
    for (long i = 0; i < live_count; i++) {
        if (live[i].handle) {
            check(cuMemUnmap(live[i].ptr, live[i].size), "cuMemUnmap (teardown)", file, line_no);
            check(cuMemRelease(live[i].handle), "cuMemRelease (teardown)", file, line_no);
        } else {
            check(cuMemFree(live[i].ptr), "cuMemFree (teardown)", file, line_no);
        }
    }
    if (span) check(cuMemAddressFree(base, span), "cuMemAddressFree", file, line_no);
    t.teardown_us = now_us() - start;
    free(live);
    print_tally(base_name(file), "segments", &t);
    add(&total, &t);
}

int main(int argc, char **argv) {
    int first = 2;
    if (argc > 3 && strcmp(argv[2], "--page-size") == 0) {
        page_size = strtoull(argv[3], NULL, 10);
        first = 4;
    }
    if (argc <= first || page_size == 0 || (strcmp(argv[1], "heap") != 0 && strcmp(argv[1], "segments") != 0)) {
        fprintf(stderr, "usage: %s heap [--page-size BYTES] LOG... | segments CSV...\n", argv[0]);
        return 2;
    }
    const char *file = "setup";
    long line_no = 0;
    check(cuInit(0), "cuInit", file, line_no);
    CUdevice device;
    check(cuDeviceGet(&device, 0), "cuDeviceGet", file, line_no);
    CUcontext context;
    check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain", file, line_no);
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent", file, line_no);
    device_memory(device, &prop, &access_desc);
    size_t granularity = 0;
    check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity", file,
          line_no);
    if (granularity > page_size || page_size % granularity != 0) {
        fprintf(stderr, "the device's granularity %zu does not divide the page size %llu\n", granularity, page_size);
        return 1;
    }
    int heap = strcmp(argv[1], "heap") == 0;
    for (int i = first; i < argc; i++) {
        if (heap) {
            replay_heap(argv[i]);
        } else {
            replay_segments(argv[i]);
        }
    }
    print_tally("all", argv[1], &total);
    check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease", file, line_no);
    return 0;
}
