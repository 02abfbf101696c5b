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
 * That is the simplest backend of the heap, one handle per page, as `scripts/check_placements.py --handles`
 * prices it. Allocation and free lines make no driver call and are skipped.
 * segments: `segment_alloc` / `segment_free` lines become `cuMemAlloc` / `cuMemFree` (what PyTorch's caching
 * allocator calls through cudaMalloc / cudaFree); `segment_map` / `segment_unmap` (expandable segments) become one
 * handle of the line's size created, mapped and given access in a reserved range, and unmapped and released.
 *
 * Each operation is timed as a whole (clock_gettime around its calls), and its calls by kind. Prints one line per
 * file: operations, handles created and released, pages mapped and unmapped, the time of the file's operations, and
 * the time by call; then the pages still mapped are unmapped and their handles released, timed apart (teardown, not
 * counted: PyTorch's side frees its live segments there too). The last line sums all files. */
#define _POSIX_C_SOURCE 199309L
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The heap's page size: 2 MiB (the device's granularity), or `--page-size BYTES` for logs of a heap configured
 * with larger pages. */
static unsigned long long page_size = 2ull << 20;

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
    long ops, created, released, mapped, unmapped, mappings, remaps;
    /* Heap modes: the peak of the physical pages alive (mapped somewhere), and of those held by live handles. */
    long peak_alive, peak_held;
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
    printf("%s %s ops %ld created %ld released %ld mapped %ld unmapped %ld mappings %ld remaps %ld peak_alive %ld "
           "peak_held %ld time_ms %.3f",
           name, mode, t->ops, t->created, t->released, t->mapped, t->unmapped, t->mappings, t->remaps,
           t->peak_alive, t->peak_held, t->op_us / 1e3);
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
    into->remaps += t->remaps;
    into->peak_alive += t->peak_alive;
    into->peak_held += t->peak_held;
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

/* Opens a placement log and reads it once: the address pages its mappings reach and the physical page ids it
 * names (one past the highest of each), so that the replay can size its tables. */
static FILE *scan_log(const char *file, size_t *pages, size_t *ids) {
    FILE *in = fopen(file, "r");
    if (!in) {
        perror(file);
        exit(1);
    }
    char text[256];
    unsigned long long a, b, c, end = 0, id_end = 0;
    while (fgets(text, sizeof text, in)) {
        if (sscanf(text, "map,,%llu,%llu", &a, &b) == 2 || sscanf(text, "unmap,,%llu,%llu", &a, &b) == 2) {
            if (a + b > end) end = a + b;
        } else if (sscanf(text, "pages,%llu,%llu,%llu", &a, &b, &c) == 3) {
            if (a + c > id_end) id_end = a + c;
        }
    }
    rewind(in);
    *pages = (size_t)((end + page_size - 1) / page_size);
    *ids = (size_t)id_end;
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
    check(cuMemAddressReserve(&base, pages * page_size, 0, 0, 0), "cuMemAddressReserve", file, line_no);
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
            for (unsigned long long k = 0; k < c; k++) {
                unsigned long long id = a + k, offset = b + k * page_size;
                if (handles[id] == 0) {
                    TIMED(&t, T_CREATE, cuMemCreate(&handles[id], page_size, &prop, 0), "cuMemCreate");
                    t.created++;
                    if (t.created - t.released > t.peak_alive) t.peak_alive = t.peak_held = t.created - t.released;
                }
                TIMED(&t, T_MAP, cuMemMap(base + offset, page_size, 0, handles[id], 0), "cuMemMap");
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
            for (unsigned long long offset = a; offset < a + b; offset += page_size) {
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
        check(cuMemUnmap(base + page * page_size, page_size), "cuMemUnmap (teardown)", file, line_no);
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

/* heap-runs: a backend with one handle for all the pages a map call creates, laid out in address order, and one
 * mapping for each run of address pages showing consecutive pages of one handle (`cuMemMap` at the run's offset in
 * its handle). A handle is released once none of its pages is mapped anywhere, so memory goes back a whole handle
 * at a time; the tally's `held_pages` says how much that holds beyond the log's live pages at their peak. An unmap
 * that covers part of a mapping unmaps the whole mapping and maps the parts outside the range again (`remaps`). */
struct handle_record {
    CUmemGenericAllocationHandle handle;
    long pages, mapped; /* its size in pages; its pages mapped, counted once per address */
};

/* One mapping: a run of address pages from its first, showing pages `index`.. of handle `handle`. Kept at its
 * first page; every page of it names that first page in `first_of`. */
struct run_tables {
    int64_t *first_of;           /* per address page: the first page of its mapping, or -1 */
    uint32_t *length, *index;    /* per first page of a mapping */
    int32_t *handle;             /* per first page of a mapping */
    int32_t *handle_of;          /* per physical page id: its handle, or -1 */
    uint32_t *index_of;          /* per physical page id: its page within the handle */
    uint32_t *mappings_of;       /* per physical page id: the addresses it shows at */
    struct handle_record *handles;
    long handle_count, alive, held, peak_alive, peak_held;
    CUdeviceptr base;
};

/* Maps `length` address pages from `first`, pages `index`.. of handle `handle`, as one mapping. */
static void map_run(struct run_tables *r, struct tally *t, const char *file, long line_no, size_t first,
                    uint32_t length, int32_t handle, uint32_t index) {
    TIMED(t, T_MAP,
          cuMemMap(r->base + first * page_size, length * page_size, index * page_size, r->handles[handle].handle, 0),
          "cuMemMap");
    t->mappings++;
    r->length[first] = length;
    r->index[first] = index;
    r->handle[first] = handle;
    for (size_t page = first; page < first + length; page++) r->first_of[page] = (int64_t)first;
    r->handles[handle].mapped += length;
}

static void replay_heap_runs(const char *file) {
    size_t pages, ids;
    FILE *in = scan_log(file, &pages, &ids);
    struct tally t = {0};
    if (pages == 0) {
        fclose(in);
        print_tally(base_name(file), "heap-runs", &t);
        return;
    }
    struct run_tables r = {0};
    r.first_of = allocate_or_die(pages, sizeof *r.first_of);
    r.length = allocate_or_die(pages, sizeof *r.length);
    r.index = allocate_or_die(pages, sizeof *r.index);
    r.handle = allocate_or_die(pages, sizeof *r.handle);
    r.handle_of = allocate_or_die(ids, sizeof *r.handle_of);
    r.index_of = allocate_or_die(ids, sizeof *r.index_of);
    r.mappings_of = allocate_or_die(ids, sizeof *r.mappings_of);
    /* At most one handle per map call, each of one page or more. */
    r.handles = allocate_or_die(pages > ids ? pages : ids, sizeof *r.handles);
    uint64_t *shown = allocate_or_die(pages, sizeof *shown); /* per address page: its physical page id */
    /* A map call's pages, in address order: their ids and address pages. */
    uint64_t *call_ids = allocate_or_die(pages, sizeof *call_ids);
    size_t *call_pages = allocate_or_die(pages, sizeof *call_pages);
    for (size_t i = 0; i < pages; i++) r.first_of[i] = -1;
    for (size_t i = 0; i < ids; i++) r.handle_of[i] = -1;
    long line_no = 0;
    check(cuMemAddressReserve(&r.base, pages * page_size, 0, 0, 0), "cuMemAddressReserve", file, line_no);
    char text[256], event[16];
    unsigned long long a, b, c, map_offset = 0, map_size = 0;
    size_t call_count = 0;
    int pending = 0;
    double op_start = 0;
    for (;;) {
        int more = fgets(text, sizeof text, in) != NULL;
        line_no++;
        if (more && sscanf(text, "pages,%llu,%llu,%llu", &a, &b, &c) == 3) {
            for (unsigned long long k = 0; k < c; k++) {
                call_ids[call_count] = a + k;
                call_pages[call_count++] = (size_t)((b + k * page_size) / page_size);
            }
            continue;
        }
        if (pending) {
            /* The call's new pages: one handle, in address order. */
            long fresh = 0;
            for (size_t k = 0; k < call_count; k++) fresh += r.handle_of[call_ids[k]] < 0;
            if (fresh > 0) {
                struct handle_record *h = &r.handles[r.handle_count];
                TIMED(&t, T_CREATE, cuMemCreate(&h->handle, fresh * page_size, &prop, 0), "cuMemCreate");
                h->pages = fresh;
                t.created++;
                uint32_t next = 0;
                for (size_t k = 0; k < call_count; k++) {
                    if (r.handle_of[call_ids[k]] < 0) {
                        r.handle_of[call_ids[k]] = (int32_t)r.handle_count;
                        r.index_of[call_ids[k]] = next++;
                    }
                }
                r.handle_count++;
                r.held += fresh;
            }
            /* One mapping per run of consecutive pages of one handle. */
            size_t k = 0;
            while (k < call_count) {
                size_t end = k + 1;
                uint64_t id = call_ids[k];
                while (end < call_count && call_pages[end] == call_pages[end - 1] + 1 &&
                       r.handle_of[call_ids[end]] == r.handle_of[id] &&
                       r.index_of[call_ids[end]] == r.index_of[id] + (end - k)) {
                    end++;
                }
                map_run(&r, &t, file, line_no, call_pages[k], (uint32_t)(end - k), r.handle_of[id], r.index_of[id]);
                k = end;
            }
            for (k = 0; k < call_count; k++) {
                shown[call_pages[k]] = call_ids[k];
                r.alive += r.mappings_of[call_ids[k]]++ == 0;
            }
            t.mapped += (long)call_count;
            TIMED(&t, T_ACCESS, cuMemSetAccess(r.base + map_offset, map_size, &access_desc, 1), "cuMemSetAccess");
            t.op_us += now_us() - op_start;
            t.ops++;
            if (r.alive > r.peak_alive) r.peak_alive = r.alive;
            if (r.held > r.peak_held) r.peak_held = r.held;
            pending = 0;
            call_count = 0;
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
            size_t first = (size_t)(a / page_size), last = (size_t)((a + b) / page_size) - 1;
            if (r.first_of[first] < 0 || r.first_of[last] < 0) {
                fprintf(stderr, "%s: line %ld: unmap of a page not mapped\n", file, line_no);
                exit(1);
            }
            /* Whole mappings only: from the start of the first page's to the end of the last page's. */
            size_t low = (size_t)r.first_of[first], top = (size_t)r.first_of[last];
            size_t high = top + r.length[top];
            struct { size_t first; uint32_t length, index; int32_t handle; } keep[2] = {
                {low, (uint32_t)(first - low), r.index[low], r.handle[low]},
                {last + 1, (uint32_t)(high - last - 1), r.index[top] + (uint32_t)(last + 1 - top), r.handle[top]},
            };
            TIMED(&t, T_UNMAP, cuMemUnmap(r.base + low * page_size, (high - low) * page_size), "cuMemUnmap");
            int32_t touched[2] = {r.handle[low], r.handle[top]};
            for (size_t page = low; page < high; page++) {
                int64_t head = r.first_of[page];
                if (head < 0) {
                    fprintf(stderr, "%s: line %ld: a hole inside an unmapped range\n", file, line_no);
                    exit(1);
                }
                r.handles[r.handle[head]].mapped--;
                r.first_of[page] = -1;
                if (page >= first && page <= last) {
                    uint64_t id = shown[page];
                    r.alive -= --r.mappings_of[id] == 0;
                    t.unmapped++;
                }
            }
            /* Every handle met in the range but the edges' mapped pages again or ends below; those inside the
             * range are released when none of their pages is mapped (the edges checked after the remaps). */
            for (size_t page = first; page <= last; page++) {
                int32_t h = r.handle_of[shown[page]];
                if (r.handles[h].mapped == 0 && h != touched[0] && h != touched[1]) {
                    TIMED(&t, T_RELEASE, cuMemRelease(r.handles[h].handle), "cuMemRelease");
                    r.handles[h].mapped = -1; /* released */
                    r.held -= r.handles[h].pages;
                    t.released++;
                }
            }
            for (int side = 0; side < 2; side++) {
                if (keep[side].length == 0) continue;
                map_run(&r, &t, file, line_no, keep[side].first, keep[side].length, keep[side].handle,
                        keep[side].index);
                TIMED(&t, T_ACCESS,
                      cuMemSetAccess(r.base + keep[side].first * page_size, keep[side].length * page_size,
                                     &access_desc, 1),
                      "cuMemSetAccess");
                t.remaps++;
            }
            for (int side = 0; side < 2; side++) {
                int32_t h = touched[side];
                if (r.handles[h].mapped == 0) {
                    TIMED(&t, T_RELEASE, cuMemRelease(r.handles[h].handle), "cuMemRelease");
                    r.handles[h].mapped = -1;
                    r.held -= r.handles[h].pages;
                    t.released++;
                }
            }
            t.op_us += now_us() - start;
            t.ops++;
        }
    }
    fclose(in);
    double start = now_us();
    for (size_t page = 0; page < pages; page++) {
        if (r.first_of[page] != (int64_t)page) continue;
        check(cuMemUnmap(r.base + page * page_size, r.length[page] * page_size), "cuMemUnmap (teardown)", file,
              line_no);
        r.handles[r.handle[page]].mapped -= r.length[page];
    }
    for (long h = 0; h < r.handle_count; h++) {
        if (r.handles[h].mapped == 0) check(cuMemRelease(r.handles[h].handle), "cuMemRelease (teardown)", file, line_no);
    }
    check(cuMemAddressFree(r.base, pages * page_size), "cuMemAddressFree", file, line_no);
    t.teardown_us = now_us() - start;
    t.peak_alive = r.peak_alive;
    t.peak_held = r.peak_held;
    free(r.first_of);
    free(r.length);
    free(r.index);
    free(r.handle);
    free(r.handle_of);
    free(r.index_of);
    free(r.mappings_of);
    free(r.handles);
    free(shown);
    free(call_ids);
    free(call_pages);
    print_tally(base_name(file), "heap-runs", &t);
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
    struct segment *live = calloc(count + 1, sizeof *live);
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
    const char *mode = argv[1];
    if (argc <= first || page_size == 0 ||
        (strcmp(mode, "heap") != 0 && strcmp(mode, "heap-runs") != 0 && strcmp(mode, "segments") != 0)) {
        fprintf(stderr, "usage: %s heap|heap-runs [--page-size BYTES] LOG... | segments CSV...\n", argv[0]);
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
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    access_desc.location = prop.location;
    access_desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    size_t granularity = 0;
    check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity", file,
          line_no);
    if (granularity > page_size || page_size % granularity != 0) {
        fprintf(stderr, "the device's granularity %zu does not divide the page size %llu\n", granularity, page_size);
        return 1;
    }
    int heap = strcmp(argv[1], "heap") == 0, runs = strcmp(argv[1], "heap-runs") == 0;
    for (int i = first; i < argc; i++) {
        if (heap) {
            replay_heap(argv[i]);
        } else if (runs) {
            replay_heap_runs(argv[i]);
        } else {
            replay_segments(argv[i]);
        }
    }
    print_tally("all", argv[1], &total);
    check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease", file, line_no);
    return 0;
}
