//! The virtual heap: for devices with [`VirtualMemory`], one address range per memory type, reserved once and
//! carved by the core's TLSF, with physical pages mapped when allocations first touch them and given back by a
//! pluggable release policy. Physical pages are named by the heap and may show at several addresses: a free
//! physical page stays mapped where it was and can be mapped again elsewhere, so a request that finds no ready
//! pages where TLSF puts it gets the free physical pages mapped once more at fresh addresses (one driver call,
//! no new memory) instead of pages being unmapped in one place and mapped in another. CUDA maps onto it
//! directly (`cuMemAddressReserve`; a physical allocation per page, `cuMemCreate` for new ones, `cuMemMap` +
//! `cuMemSetAccess` per mapped range; `cuMemUnmap` per unmapped range, `cuMemRelease` of a page when it is mapped
//! nowhere); the host backend models it, in real mode with a memory file mapped shared.
//!
//! A growing replacement series (a KV cache replaced every step by a copy one token longer) is detected online:
//! its members take ranges rounded up to a grid of growth steps, so each copy fits the hole its predecessor left,
//! and when the series outgrows those holes, one mapping shows the live members' physical pages after the first
//! member to move, where the next ones follow it. Mappings nothing can use are unmapped past a bound per physical
//! page.
//!
//! Invariants: every page a live allocation touches is mapped, and its physical page is in use by that address
//! page alone (so two live allocations never share memory through different addresses); `page_users[p]` counts
//! the live allocations touching page `p`; a physical page is alive exactly while it is mapped somewhere, and free
//! exactly while it is alive and not in use; every map or unmap call covers one contiguous range of addresses and
//! counts as one driver operation.
//!
//! An allocation's pages are taken and given back a page at a time, or, where they show long runs of consecutive
//! physical pages (as large requests' pages mostly do), a run at a time: the runs are found in a bitmap over the
//! address pages and the physical pages' flags are checked and changed eight at a time.

use std::fmt;
use std::sync::Arc;

use memcarve_core::{Handle, ResourceClass, VirtualBlock, VirtualBlockConfig};

use crate::device::{DeviceError, VirtualMemory};
use crate::diagnostics::{AllocationMeta, Leak};
pub use crate::heap_tiers::{HeapTier, RequestMix};

/// What a release policy sees when it decides how much empty committed memory to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeapState {
    /// Bytes of committed pages.
    pub committed_bytes: u64,
    /// Bytes of committed pages no live allocation touches.
    pub empty_bytes: u64,
    /// Bytes of live allocations.
    pub live_bytes: u64,
    /// The most bytes ever committed at once.
    pub peak_committed_bytes: u64,
    /// The most bytes ever live at once.
    pub peak_live_bytes: u64,
    /// Page size.
    pub page_size: u64,
    /// Bytes handed out by allocations so far, freed ones included.
    pub allocated_bytes: u64,
    /// Allocations made since the last free (a run of them is a heap filling up: a model's weights arriving, a
    /// forward pass).
    pub run_allocations: u64,
    /// Allocations made so far, freed ones included.
    pub allocations: u64,
    /// When the heap asks for pages ahead of a mapping ([`ReleasePolicy::commit_ahead_bytes`]): the bytes of the
    /// request the mapping is for; 0 otherwise.
    pub request_bytes: u64,
}

/// Decides how much empty committed memory a virtual heap keeps after a free. Keeping some avoids paying the
/// driver again when the memory is reused soon; keeping too much wastes it.
pub trait ReleasePolicy: Send + Sync + fmt::Debug {
    /// Bytes of free physical pages to keep; pages beyond that are given back (unmapped wherever they show).
    fn retained_bytes(&self, state: &HeapState) -> u64;

    /// Bytes of new physical pages to map beyond an allocation's last page when it needs a mapping anyway (one
    /// driver call for what would otherwise be several). Default: none.
    fn commit_ahead_bytes(&self, _state: &HeapState) -> u64 {
        0
    }

    /// Whether [`ReleasePolicy::retained_bytes`] never asks for less than the free pages of a heap whose
    /// committed bytes are within its peak committed bytes (always so after a free): then the heap does not ask
    /// after frees, only when it is trimmed. Default: false.
    fn keeps_free_pages_within_peak(&self) -> bool {
        false
    }
}

/// Keeps committed memory within a slack of the highest live bytes seen so far: free pages stay committed as long as
/// `committed <= max((1 + slack) × peak live so far, peak live so far + min_spare_bytes, peak committed so far)`, and
/// new pages are committed ahead by what that budget allows (up to `max_ahead_fraction` of the committed bytes). The
/// spare applies while the heap is young, until it has handed out `spare_until_allocated` times its peak live bytes in
/// all (or made more than `spare_until_allocations` allocations): a heap still growing into its working set maps ahead
/// by the spare, and one that has cycled through it several times takes a new peak as an excursion, mapping ahead only
/// within the slack; a mapping for a request of `spare_ahead_below_bytes` or more maps ahead within the slack only.
/// While a young heap fills up past its peak (a run of allocations without a free: a model's weights arriving), a
/// mapping maps ahead at least as much as its request, up to `loading_ahead_bytes`, even past the budget. A workload
/// that returns to earlier peaks (training steps, generation rounds) then reuses its pages without driver calls, and
/// peak committed stays within the slack of peak live (plus the pages partly used at allocations' edges). Keeping what
/// the peak committed already held costs no memory the peak has not shown, and giving a page back costs an unmap at
/// every address it shows at. Online: it uses only what has happened so far.
#[derive(Debug, Clone, Copy)]
pub struct PeakSlack {
    /// Allowed committed bytes above the peak live bytes so far, as a fraction (0.04 = 4 %).
    pub slack: f64,
    /// Largest commit-ahead, as a fraction of the committed bytes.
    pub max_ahead_fraction: f64,
    /// Allowed committed bytes above the peak live bytes so far, at least: pages are partly used at the edges of
    /// allocations, so a small heap needs a few spare pages whatever its size, or it maps and unmaps at the
    /// budget's edge on every batch.
    pub min_spare_bytes: u64,
    /// The spare applies until the heap has allocated this many times its peak live bytes in all (freed bytes
    /// included); after that only the slack does, and runs of allocations no longer map ahead past the budget
    /// (`loading_run`). `f64::INFINITY` keeps both for good (while `spare_until_allocations` does not end them).
    pub spare_until_allocated: f64,
    /// The spare, and with it the runs' pages ahead (`loading_run`), also ends once the heap has made more than this
    /// many allocations (freed ones included; `u64::MAX`, the default: never by count). A heap whose peak is mostly
    /// long-lived data (a model's weights, with a generation's small tensors coming and going around them) hands out
    /// its peak's worth of bytes slowly, and stays young by `spare_until_allocated` through thousands of allocations;
    /// its spare is then the empty pages at a late peak. A candidate, not the default: see docs/BENCHMARKS.md
    /// ("Fortieth session") for what it did on the traces of the time and how it is to be judged.
    pub spare_until_allocations: u64,
    /// A mapping for a request that raises the peak live bytes, made after at least this many allocations without
    /// a free (a model's weights arriving one tensor at a time) while the spare applies (`spare_until_allocated`,
    /// `spare_until_allocations`), maps pages ahead past the budget: see `loading_ahead_bytes`. In a heap that has
    /// cycled through its working set, such a run is an excursion (a large transient after a few small ones) as
    /// often as a load, and the pages it mapped ahead were the empty pages at its peak.
    pub loading_run: u64,
    /// In such a run, a mapping maps at least as many bytes ahead as its request (rounded up to pages), up to this
    /// many, less the empty committed bytes, which it maps ahead first (0: none past the budget). A heap whose
    /// slack is taken by pages partly used elsewhere would otherwise map each tensor of a load by itself.
    pub loading_ahead_bytes: u64,
    /// A mapping for a request of at least this many bytes maps pages ahead within the slack only, not the spare
    /// (`u64::MAX`: the spare for every request). Pages ahead serve the requests after it, and a spare's worth is
    /// less than one more request of that size; where such a request is a young heap's last growth, they are the
    /// empty pages at its peak.
    pub spare_ahead_below_bytes: u64,
}

impl Default for PeakSlack {
    /// 4 % slack, at least 16 MiB (8 pages of 2 MiB) until the heap has allocated 8 times its peak live bytes,
    /// and new pages committed ahead by up to half the committed bytes: on the eleven traces it was first chosen
    /// on it commits at most 1.048 × the peak live bytes; on the four recorded after, up to 1.064 ×
    /// (gpt2_sample_generate). The fraction binds where the budget has more room than that share of the committed
    /// bytes, which is while a heap is small next to its budget; from a quarter to a half, no trace needed more
    /// operations and six needed fewer. Ending the spare at 8 times (anywhere from 2 to 16 did about as well)
    /// brought five heaps of 186 to 263 MiB within 1.05 × and broke none of 112 traces (docs/BENCHMARKS.md,
    /// "Twenty-first session"). In a run of 8 allocations or more without a free, a mapping that raises the peak
    /// maps as much ahead as its request, up to 10 MiB: of 134 traces it met one more (ensemble_infer, whose
    /// loaded weights took a mapping for three tensors in four) and lost none; it changed none of seven recorded
    /// afterwards to judge it ("Twenty-second session" and "Twenty-third session"); since the twenty-fifth session
    /// only while the spare applies, which of 173 traces changes lstm_lm_sample_small alone (1.075 → 1.037 ×: a
    /// 59 MiB transient after a run of small requests, in a heap that had allocated 51 times its peak). Requests
    /// of 8 MiB or more map ahead within the slack only: of 149 traces, six small heaps met and two traces at
    /// their operation limits lost (21 to 17 misses); of eight recorded afterwards to judge it, one met and none
    /// lost ("Twenty-third session").
    fn default() -> PeakSlack {
        PeakSlack {
            slack: 0.04,
            max_ahead_fraction: 0.5,
            min_spare_bytes: 16 << 20,
            spare_until_allocated: 8.0,
            spare_until_allocations: u64::MAX,
            loading_run: 8,
            loading_ahead_bytes: 10 << 20,
            spare_ahead_below_bytes: 8 << 20,
        }
    }
}

impl PeakSlack {
    /// The slack alone: `(1 + slack) ×` the peak live bytes.
    fn proportional(&self, state: &HeapState) -> u64 {
        (state.peak_live_bytes as f64 * (1.0 + self.slack)) as u64
    }

    /// Whether the heap has handed out at most `spare_until_allocated` times its peak live bytes, in at most
    /// `spare_until_allocations` allocations: still growing into its working set, not cycling through it.
    fn young(&self, state: &HeapState) -> bool {
        // Written so that an infinite factor times no peak yet (not a number) counts as young.
        let old = state.allocated_bytes as f64 > self.spare_until_allocated * state.peak_live_bytes as f64;
        !old && state.allocations <= self.spare_until_allocations
    }

    fn budget(&self, state: &HeapState) -> u64 {
        let proportional = self.proportional(state);
        let spare = if self.young(state) { self.min_spare_bytes } else { 0 };
        proportional.max(state.peak_live_bytes.saturating_add(spare))
    }
}

impl ReleasePolicy for PeakSlack {
    fn retained_bytes(&self, state: &HeapState) -> u64 {
        let in_use = state.committed_bytes - state.empty_bytes;
        self.budget(state).max(state.peak_committed_bytes).saturating_sub(in_use)
    }

    fn commit_ahead_bytes(&self, state: &HeapState) -> u64 {
        let budget = if state.request_bytes >= self.spare_ahead_below_bytes {
            self.proportional(state)
        } else {
            self.budget(state)
        };
        let room = budget.saturating_sub(state.committed_bytes);
        let ahead = room.min((state.committed_bytes as f64 * self.max_ahead_fraction) as u64);
        let loading = state.request_bytes > 0
            && state.run_allocations >= self.loading_run
            && state.live_bytes >= state.peak_live_bytes
            && self.young(state);
        if !loading {
            return ahead;
        }
        let request = state.request_bytes.div_ceil(state.page_size.max(1)).saturating_mul(state.page_size);
        ahead.max(request.min(self.loading_ahead_bytes).saturating_sub(state.empty_bytes))
    }

    /// True: what it keeps is at least the peak committed bytes less those in use.
    fn keeps_free_pages_within_peak(&self) -> bool {
        true
    }
}

/// Decommits every empty page at once: the least memory, the most driver calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReleaseImmediately;

impl ReleasePolicy for ReleaseImmediately {
    fn retained_bytes(&self, _state: &HeapState) -> u64 {
        0
    }
}

/// Keeps up to a fixed number of bytes of empty pages, plus a fraction of the live bytes.
#[derive(Debug, Clone, Copy)]
pub struct RetainEmpty {
    /// Bytes always allowed to stay committed while empty.
    pub bytes: u64,
    /// Extra allowance per live byte (0.05 keeps 5 % of the live bytes as slack).
    pub live_fraction: f64,
}

impl ReleasePolicy for RetainEmpty {
    fn retained_bytes(&self, state: &HeapState) -> u64 {
        self.bytes.saturating_add((state.live_bytes as f64 * self.live_fraction) as u64)
    }
}

/// How the virtual heaps of an allocator are set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VirtualHeapConfig {
    /// Address space reserved per memory type; None: [`VirtualHeapConfig::ADDRESS_SPACE_PER_HEAP_BYTE`] times
    /// the type's heap size (rounded up to the page size).
    pub reserve_size: Option<u64>,
    /// Allocation granularity inside the heap (a power of two).
    pub min_granularity: u64,
    /// When empty pages are given back.
    pub release: Arc<dyn ReleasePolicy>,
    /// Whether the heap watches for growing replacement series (a cache grown by a token at a time: each new
    /// copy a little larger than the one freed right after it) and places their members to suit (see
    /// [`VirtualHeapConfig::with_growing_series`]).
    pub growing_series: bool,
    /// Requests below this many bytes are placed apart, at the low end of the address range (0: nowhere apart;
    /// see [`VirtualHeapConfig::with_small_below`]).
    pub small_below_bytes: u64,
    /// The heap's page, the unit it maps, commits and gives back; None: the device's granularity (see
    /// [`VirtualHeapConfig::with_page_size`]).
    pub page_size: Option<u64>,
    /// Tiers with larger pages, opened as the heap grows (see [`VirtualHeapConfig::with_tiers`]).
    pub tiers: Vec<HeapTier>,
}

impl Default for VirtualHeapConfig {
    /// The heap size reserved, 512-byte granularity (as PyTorch rounds), the default [`PeakSlack`], requests
    /// below 64 KiB apart, and [`VirtualHeapConfig::default_tiers`].
    fn default() -> VirtualHeapConfig {
        VirtualHeapConfig {
            reserve_size: None,
            min_granularity: 512,
            release: Arc::new(PeakSlack::default()),
            growing_series: true,
            small_below_bytes: 64 << 10,
            page_size: None,
            tiers: VirtualHeapConfig::default_tiers(),
        }
    }
}

impl VirtualHeapConfig {
    /// The default tiers: 8 MiB pages opened by a [`RequestMix`] rule (at the request that brings the heap's
    /// allocated bytes to 512 MiB, if requests of 32 MiB or more made 95 % of them and the heap has committed at
    /// most 128 MiB by then), and 32 MiB pages once the heap has committed 16 GiB (see
    /// [`VirtualHeapConfig::with_tiers`]).
    pub fn default_tiers() -> Vec<HeapTier> {
        let rule = RequestMix::new(512 << 20, 32 << 20, 0.95).with_max_committed_bytes(128 << 20);
        vec![HeapTier::new(u64::MAX, 8 << 20).with_request_mix(rule), HeapTier::new(16 << 30, 32 << 20)]
    }

    /// Address space reserved per byte of heap by default: the heap maps free physical pages at fresh addresses
    /// as well as where they were, so it uses more addresses than memory, and addresses cost nothing.
    pub const ADDRESS_SPACE_PER_HEAP_BYTE: u64 = 4;

    /// Sets the reserved size.
    pub fn with_reserve_size(mut self, bytes: u64) -> VirtualHeapConfig {
        self.reserve_size = Some(bytes);
        self
    }

    /// Sets the release policy.
    pub fn with_release(mut self, release: Arc<dyn ReleasePolicy>) -> VirtualHeapConfig {
        self.release = release;
        self
    }

    /// Sets the allocation granularity.
    pub fn with_min_granularity(mut self, granularity: u64) -> VirtualHeapConfig {
        self.min_granularity = granularity;
        self
    }

    /// Turns the handling of growing replacement series on (the default) or off. A series is an allocation of
    /// half a page or more followed at once by the free of one up to an eighth smaller, again and again (a KV
    /// cache concatenated with a token per step). While one runs, a request of about its size gets a range
    /// rounded up to a grid of several growth steps, so that the next copies fit the hole each freed copy leaves
    /// (no driver call until the sizes cross the grid), and when a member needs a mapping anyway, the physical
    /// pages of the live members, oldest first, are mapped after it too: they are the pages the next copies will
    /// find free there, so the series moves on in one call instead of one per member.
    pub fn with_growing_series(mut self, on: bool) -> VirtualHeapConfig {
        self.growing_series = on;
        self
    }

    /// Places requests below `bytes` apart from the others (0: none), in a region of up to
    /// [`VirtualHeapConfig::SMALL_REGION_BYTES`] at the low end of the address range, while it has room. Small
    /// tensors often live long (a normalisation layer's counters and biases) among large ones that do not (the
    /// weights a model converts to half precision, freeing the originals): mixed in, each pins a page that is
    /// otherwise empty. Apart, they share a few pages of their own. Pages for them are mapped one run at a time,
    /// with nothing mapped ahead, and the region's first page is held from its first allocation until the heap is
    /// trimmed (it counts as used, not empty, meanwhile), so that a few small tensors coming and going do not cost
    /// an unmap and a map each time.
    pub fn with_small_below(mut self, bytes: u64) -> VirtualHeapConfig {
        self.small_below_bytes = bytes;
        self
    }

    /// Sets the heap's page size: a power of two, at least the device's granularity (2 MiB on CUDA GPUs), which
    /// is the default and what the heap's defaults were chosen with. The heap's work per operation grows with the
    /// pages an allocation spans, so a heap of large tensors runs faster with larger pages, and each allocation's
    /// edges and each commit ahead then round to more memory. On the H200 traces, 8 MiB pages replayed the heaps of
    /// 2 GiB or more 1.3 to 1.8 times as fast (geometric mean 1.44 over eight traces) and kept 66 of their 67
    /// within the memory and operation goal, but put 56 of the 62 heaps under 400 MiB over it instead of 14
    /// (docs/BENCHMARKS.md, "Twenty-eighth session"). On CUDA, where each page is a handle of its own and costs
    /// the driver about the same whatever its size, larger pages also cut the driver's time in proportion (8 MiB:
    /// a quarter, estimated over those traces). PyTorch's expandable segments map their pool of large blocks in
    /// 20 MiB steps. [`Allocator::new`](crate::Allocator::new) refuses a size that is not a power of two or is
    /// below the device's granularity.
    pub fn with_page_size(mut self, bytes: u64) -> VirtualHeapConfig {
        self.page_size = Some(bytes);
        self
    }

    /// Sets the tiers with larger pages the heap opens as it grows, in order (none: one page size throughout).
    /// When the heap's committed bytes reach a tier's `opens_at_bytes`, the tier is reserved (an address range
    /// as large as the first) and new allocations go there; the tiers below take none, and give their empty
    /// pages back when the new tier needs a mapping, so the heap moves onto larger pages as its working set
    /// turns over. One release policy decision covers all tiers: the top one's policy sees the whole heap.
    /// On CUDA a page is a handle of its own, and each handle costs about the same to create and map whatever
    /// its size (`benches/cuda/vmm_costs.c`), so a heap of tens of gigabytes in 2 MiB pages spends seconds of
    /// driver time on them; a tier of 32 MiB pages cuts that sixteenfold for what it holds, and a heap that
    /// large loses little to a page's rounding. Moving onto a tier costs unmaps of the pages left below and
    /// mappings above: one tier of 32 MiB pages from 16 GiB (the default's second) changed none of the 197 H200
    /// traces' goal results; the seven heaps that reach it made their driver calls on the H200 in 0.44 to 0.57
    /// of the time (a third of what is left is giving back the first tier's pages) and replayed 1.20 × as fast.
    /// Tiers from 4 GiB would cut the estimated driver time of all 197 from 22.5 to 16.3 s, but put eight heaps
    /// of 4 to 16 GiB over their operation limits (docs/BENCHMARKS.md, "Thirtieth session").
    /// The first tier may also open early by a [`RequestMix`] rule (`HeapTier::with_request_mix`): a heap whose
    /// bytes go to large requests moves onto larger pages while little is committed. On the 211 H200 traces, 8 MiB
    /// pages once 512 MiB are allocated (deciding after that request), if requests of 32 MiB or more made 95 % of
    /// them, open on 14 heaps, replay four of the heaps of 5 to 11 GiB that miss the goal's throughput 1.16 to 1.39 ×
    /// as fast, and put one more trace over its operation limit; of eight traces recorded afterwards to judge it,
    /// they open on four, replay the two large ones 1.5 × as fast, and put the two of about 1 GiB over their
    /// limits, as moving onto the tier costs unmaps and mappings (docs/BENCHMARKS.md, "Thirty-second session").
    /// A rule decides at the request that reaches its threshold, before placing it, and may be bounded by what the
    /// heap has committed by then ([`RequestMix::with_max_committed_bytes`]): with 128 MiB, the same rule opens on
    /// six of the 219 traces, none over a limit, and replays embedding_table_train 1.76 ×, wide_mlp_train 1.62 ×
    /// and vocab_250k_chunked_train 1.44 × as fast; of eight traces recorded after it was written, it opens on two
    /// (1.20 and 1.16 × as fast) and changes no goal result. That rule, with the 32 MiB tier from 16 GiB after it,
    /// is the default ([`VirtualHeapConfig::default_tiers`]; docs/BENCHMARKS.md, "Thirty-third session").
    /// [`Allocator::new`](crate::Allocator::new) refuses page sizes that are not powers of two growing from tier
    /// to tier, thresholds that do not grow (a first tier opened only by its rule has `u64::MAX`, which the others'
    /// need not exceed), and rules on other tiers or with figures that make no sense; tiers whose pages are no
    /// larger than the heap's page size are left out.
    pub fn with_tiers(mut self, tiers: Vec<HeapTier>) -> VirtualHeapConfig {
        self.tiers = tiers;
        self
    }

    /// Address space of the region for small requests, at most (and at most a quarter of the reservation): 128
    /// MiB. On the 173 H200 traces the region's highest address in use is 20 MiB (lm_2_7b_train), and a request
    /// that finds it full goes to the other ranges. The heap's per-page books (and the host device's page table)
    /// cover every address page up to the highest one mapped, so the region's size is paid for by every heap
    /// whose other ranges are used at all: with 1 GiB, a fresh heap's first mappings grew them past 512 pages
    /// (tiny_expandable_segments replayed at 3.6 M operations per second, at 4.0 with 128 MiB; the default
    /// policy's placements of all 173 traces unchanged but for the offset; docs/BENCHMARKS.md).
    pub const SMALL_REGION_BYTES: u64 = 128 << 20;
}

/// A change of the heap's committed pages, for traces and placement logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageEvent {
    /// `[offset, offset + size)` was committed (one driver operation).
    Commit {
        /// Start, in the heap's address range.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// `[offset, offset + size)` was decommitted (one driver operation).
    Decommit {
        /// Start, in the heap's address range.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// A tier of the heap opened: from `offset` on, its address range is mapped in pages of `page_size` bytes
    /// (see [`VirtualHeapConfig::with_tiers`]). In placement logs only: no driver operation, and never in the
    /// allocator's event ring.
    Tier {
        /// Start of the tier's address range, in the heap's numbering.
        offset: u64,
        /// The tier's page size.
        page_size: u64,
    },
}

/// A page event as placement logs record it: for a mapping, also the physical pages mapped, as runs of
/// consecutive ids `(first, count)` in address order (the first run at the mapping's offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRecord {
    /// The event.
    pub event: PageEvent,
    /// Physical pages of a mapping; empty for an unmapping.
    pub physical: Vec<(u32, u32)>,
}

/// Counters of one virtual heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct VirtualHeapStats {
    /// Bytes committed now.
    pub committed_bytes: u64,
    /// The most bytes committed at once.
    pub peak_committed_bytes: u64,
    /// Bytes of live allocations.
    pub live_bytes: u64,
    /// The most bytes live at once.
    pub peak_live_bytes: u64,
    /// Committed pages with no live allocation.
    pub empty_bytes: u64,
    /// Address space mapped: a physical page mapped at several addresses counts at each.
    pub mapped_bytes: u64,
    /// Map calls (one contiguous address range each, creating the physical pages it needs).
    pub commits: u64,
    /// Unmap calls (one contiguous address range each, freeing the physical pages left mapped nowhere).
    pub decommits: u64,
    /// Live allocations.
    pub allocations: u64,
    /// Bytes handed out by allocations so far, freed ones included.
    pub allocated_bytes: u64,
    /// Bytes of live allocations when the committed bytes first reached their peak (once the allocation that
    /// raised it was placed). The peak's other committed bytes are pages partly used by live allocations (the
    /// placement's share: `peak_committed_bytes - live_bytes_at_peak - empty_bytes_at_peak`) and empty pages.
    pub live_bytes_at_peak: u64,
    /// Committed pages no live allocation touched at that moment: pages kept or mapped ahead by the release
    /// policy (its share of the peak's overhead).
    pub empty_bytes_at_peak: u64,
    /// Tiers open (see [`VirtualHeapConfig::with_tiers`]): 1 until a heap opens its second.
    pub tiers: u32,
}

/// What the allocator's diagnostics count of one heap, kept with the heap under its lock rather than in atomics
/// (an atomic add per allocation and free cost more than the rest of the counting): allocations placed without a
/// mapping, and the most live allocations and bytes since the diagnostics were last reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HeapDiagnostics {
    pub reuses: u64,
    pub peak_allocations: u64,
    pub peak_live_bytes: u64,
}

const NIL: u32 = u32::MAX;

/// Free physical pages a mapping for a request also maps after it, per page of the request: the next requests
/// find ready pages there (PyTorch's pattern of a layer's tensors allocated one after another), and a bound keeps
/// the addresses each mapping uses in proportion to the request.
const AHEAD_ALIASES_PER_PAGE: u64 = 4;

/// Mappings per physical page (counting at least 64 pages) beyond which the heap unmaps the mappings nothing
/// can use (see [`VirtualHeap::unmap_stale`]): a bound on what it asks of the device's page tables.
const MAPPINGS_PER_PAGE: u64 = 8;

/// Pages a heap has room for from the start, in its per-page vectors (1 KiB each) and in its lists of physical
/// pages and of a mapping's ids: a small heap's first mappings then grow nothing (tiny_expandable_segments,
/// cold, replayed about 1.5 times as fast as with the per-page vectors from 1,024; 1.2 times as fast again with
/// the lists presized too, docs/BENCHMARKS.md).
const FIRST_PAGES: usize = 256;

/// Grows `books` to `len` entries, the new ones `value`. When its capacity runs out it grows fourfold rather than
/// twofold: a growing heap's per-page books are copied at each step, and with doubling the copies took about
/// 5 % of gnn_train's replay (20 mappings reaching 13,000 pages; docs/BENCHMARKS.md). The books take a few
/// bytes per page of 2 MiB, so unused capacity costs little.
pub(crate) fn grow_books<T: Copy>(books: &mut Vec<T>, len: usize, value: T) {
    if len > books.capacity() {
        books.reserve_exact(len.max(books.capacity() * 4) - books.len());
    }
    if len > books.len() {
        books.resize(len, value);
    }
}

/// Windows are claimed and left a run of pages showing consecutive physical pages at a time where their runs are
/// at least this many pages long on average; otherwise a page at a time, as the work per run (and the branches
/// it mispredicts) costs more than it saves there. Tests use 3, so that the randomized ones go both ways.
const LONG_RUN: usize = if cfg!(test) { 3 } else { 32 };

/// Whether window `first..=last` is claimed and left by runs (see [`LONG_RUN`]).
#[inline]
fn by_runs(joined: &Bits, first: usize, last: usize) -> bool {
    let pages = last - first + 1;
    // Every page of the window but the first that is not joined to the one before it starts a run.
    pages >= LONG_RUN && (joined.absent_in(first as u32 + 1, last as u32) as usize + 1) * LONG_RUN <= pages
}

/// Watches a heap's allocations and frees for a growing replacement series (see
/// [`VirtualHeapConfig::with_growing_series`]) and remembers its live members. O(1) per operation, and O(members)
/// per free of half a page or more.
#[derive(Debug, Clone, Default)]
struct GrowthSeries {
    /// Heap operations so far.
    ops: u64,
    /// The last allocation of half a page or more: its offset, range and requested size, and `ops` after it.
    last: Option<(u64, u64, u64, u64)>,
    /// The growth of the last replacement.
    step: u64,
    /// The requested size of the last replacement's new copy.
    size: u64,
    /// Replacements seen (up to a cap); reset after [`GrowthSeries::IDLE_OPS`] operations without one.
    streak: u32,
    /// `ops` at the last replacement.
    seen: u64,
    /// The live members' offsets and ranges, oldest first.
    members: std::collections::VecDeque<(u64, u64)>,
    /// Where the next member goes while the series moves onto pages its members' pages were mapped at ahead of
    /// time: the end of the last member placed there (None when the series is not moving).
    cursor: Option<u64>,
}

impl GrowthSeries {
    /// Replacements seen before a series counts.
    const MIN_STREAK: u32 = 4;
    /// Operations without a replacement after which a series is over.
    const IDLE_OPS: u64 = 4096;
    /// Growth steps in the grid a member's range is rounded up to (then to a power of two, at most half a
    /// page and at most [`GrowthSeries::GRID_SHARE`] of the member).
    const GRID_STEPS: u64 = 16;
    /// The grid is at most the power of two at or above this share of a member's size, so that rounding wastes
    /// less than an eighth of it: 16 steps of a series that grows fast next to its size make a grid as large as
    /// the members (bart_beam_generate's were rounded up by 30 to 90 %).
    const GRID_SHARE: u64 = 16;
    /// Live members remembered.
    const MEMBERS: usize = 256;

    /// The range for a request of `size` if it belongs to the running series: rounded up to the series' grid.
    fn range(&self, size: u64, page_size: u64) -> Option<u64> {
        let near = size + self.step >= self.size && size <= self.size + 8 * self.step;
        if self.streak < Self::MIN_STREAK || !near {
            return None;
        }
        let grid = (Self::GRID_STEPS * self.step)
            .next_power_of_two()
            .min(page_size / 2)
            .min((size / Self::GRID_SHARE).next_power_of_two());
        Some(size.next_multiple_of(grid))
    }

    /// Notes an allocation of `size` bytes placed at `offset` in a range of `range` bytes.
    fn allocated(&mut self, offset: u64, range: u64, size: u64, page_size: u64) {
        self.ops += 1;
        if size >= page_size / 2 {
            self.last = Some((offset, range, size, self.ops));
        }
        if self.ops - self.seen > Self::IDLE_OPS {
            self.streak = 0;
        }
    }

    /// Notes the free of `size` bytes at `offset`: a replacement when it comes right after an allocation a
    /// little larger, whose range then joins the members.
    fn freed(&mut self, offset: u64, size: u64, page_size: u64) {
        self.ops += 1;
        if size >= page_size / 2
            && let Some(index) = self.members.iter().position(|&(member, _)| member == offset)
        {
            self.members.remove(index);
        }
        let Some((new_offset, new_range, new_size, at)) = self.last else { return };
        if new_offset == offset {
            // The last large allocation itself is freed: it replaces nothing any more (before, the next free of
            // a little less, its predecessor's, listed it as a live member).
            self.last = None;
            return;
        }
        if self.ops - at > 2 || size >= new_size || new_size - size > new_size / 8 {
            return;
        }
        self.last = None;
        self.step = new_size - size;
        self.size = new_size;
        self.streak = (self.streak + 1).min(64);
        self.seen = self.ops;
        if self.members.len() == Self::MEMBERS {
            self.members.pop_front();
        }
        self.members.push_back((new_offset, new_range));
    }
}

/// The physical pages of a heap, named by ids: which are in use (by the one address page showing them that live
/// allocations touch), which are free (alive, in use by none; in queue order), and at which address pages each is
/// mapped. A physical page is alive while it is mapped somewhere, as the device keeps it.
#[derive(Debug, Clone, Default)]
struct PhysicalPages {
    /// Per id (one cache line holds all of an id's fields: the heap touches them together).
    ids: Vec<PhysicalPage>,
    /// Per id, whether it is in use and whether `free_queue` holds an entry for it. The address page using a
    /// page in use is the one of its mappings with users (`page_users`), or, in the middle of an allocation, the
    /// page being made the request's.
    states: States,
    /// Free pages in queue order: a page is queued when it becomes free, and one used and freed again while its
    /// entry is still queued keeps that entry's place (pages that come and go stay near the front; the order of
    /// the last frees instead made more driver operations, docs/BENCHMARKS.md). Stale entries (pages used or
    /// dead since) are skipped when met; at most one entry per id ([`QUEUED`]). The queue is
    /// `free_queue[queue_head..]`: taking from the front moves the head, and the entries before it are dropped
    /// when they are half the vector.
    free_queue: Vec<u32>,
    queue_head: usize,
    free_count: u64,
    alive: u64,
    /// Ids below `ids.len()` that are not alive, for reuse.
    spare_ids: Vec<u32>,
    epoch: u16,
}

/// What the heap knows of one physical page besides its flags in [`States`].
#[derive(Debug, Clone, Copy)]
struct PhysicalPage {
    /// Address pages it is mapped at (0: not alive).
    mappings: u32,
    /// The first address page of its list of mappings (NIL: none); the list continues in
    /// `VirtualHeap::next_alias`.
    first_alias: u32,
    /// The epoch of the last range check that saw it, to find two pages of one range mapped to one id (16 bits;
    /// the stamps are reset every 65,535 checks).
    stamp: u16,
}

impl PhysicalPage {
    const NEW: PhysicalPage = PhysicalPage { mappings: 0, first_alias: NIL, stamp: 0 };
}

/// [`States`]: the physical page is in use.
const IN_USE: u8 = 1;
/// [`States`]: the free queue holds an entry for the physical page.
const QUEUED: u8 = 2;

/// Per physical page id, a byte of flags ([`IN_USE`], [`QUEUED`]): a free loads and stores one byte per page,
/// neighbouring ids are changed without each store waiting on the last one to the same word, and a run of ids is
/// checked and changed over its bytes, which vectorizes.
#[derive(Debug, Clone, Default)]
struct States {
    states: Vec<u8>,
}

impl States {
    /// Makes room for ids below `len` (new ids have no flags).
    fn cover(&mut self, len: usize) {
        grow_books(&mut self.states, len, 0);
    }

    fn in_use(&self, id: u32) -> bool {
        self.states[id as usize] & IN_USE != 0
    }

    #[cfg(any(test, feature = "check"))]
    fn queued(&self, id: u32) -> bool {
        self.states[id as usize] & QUEUED != 0
    }

    fn take(&mut self, id: u32) {
        self.states[id as usize] |= IN_USE;
    }

    /// Clears [`IN_USE`] (a page given back as it was, or dead).
    fn untake(&mut self, id: u32) {
        self.states[id as usize] &= !IN_USE;
    }

    fn unqueue(&mut self, id: u32) {
        self.states[id as usize] &= !QUEUED;
    }

    /// Clears [`IN_USE`] and queues the page (pushed to `queue`) unless an older entry of it is still queued.
    #[inline]
    fn release(&mut self, id: u32, queue: &mut Vec<u32>) {
        let state = &mut self.states[id as usize];
        let old = *state;
        *state = (old & !IN_USE) | QUEUED;
        if old & QUEUED == 0 {
            queue.push(id);
        }
    }

    /// Whether any id of `low..=high` has `flag`.
    fn any_in(&self, low: u32, high: u32, flag: u8) -> bool {
        or_all(&self.states[low as usize..=high as usize]) & flag != 0
    }

    /// The highest id of `low..=high` in use.
    fn highest_in_use(&self, low: u32, high: u32) -> Option<u32> {
        if !self.any_in(low, high, IN_USE) {
            return None;
        }
        let at = self.states[low as usize..=high as usize].iter().rposition(|&state| state & IN_USE != 0)?;
        Some(low + at as u32)
    }

    /// Puts every id of `low..=high` in use (`on`) or takes every one out of use.
    fn take_range(&mut self, low: u32, high: u32, on: bool) {
        let states = &mut self.states[low as usize..=high as usize];
        if on {
            mask_all(states, !0, IN_USE);
        } else {
            mask_all(states, !IN_USE, 0);
        }
    }

    /// [`States::release`] on every id of `low..=high`, in order: eight ids at a time as a word, those none of
    /// which is queued pushed in one go.
    fn release_range(&mut self, low: u32, high: u32, queue: &mut Vec<u32>) {
        let states = &mut self.states[low as usize..=high as usize];
        let (and, or) = (u64::from_ne_bytes([!IN_USE; 8]), u64::from_ne_bytes([QUEUED; 8]));
        let (chunks, rest) = states.as_chunks_mut::<8>();
        let mut id = low;
        for chunk in chunks {
            let word = u64::from_ne_bytes(*chunk);
            if word & or == 0 {
                queue.extend(id..id + 8);
            } else if word & or != or {
                let unqueued = chunk.iter().zip(id..).filter(|&(&state, _)| state & QUEUED == 0);
                queue.extend(unqueued.map(|(_, id)| id));
            }
            *chunk = ((word & and) | or).to_ne_bytes();
            id += 8;
        }
        for state in rest {
            if *state & QUEUED == 0 {
                queue.push(id);
            }
            *state = (*state & !IN_USE) | QUEUED;
            id += 1;
        }
    }
}

/// The bytes of `states` or'ed together: eight at a time as a word, the last eight overlapping the eight before
/// them where the length is not a multiple of eight (or'ing a byte twice changes nothing), so that there is no
/// loop over the bytes left.
fn or_all(states: &[u8]) -> u8 {
    let tail = states.len().checked_sub(8).and_then(|start| <&[u8; 8]>::try_from(&states[start..]).ok());
    let Some(tail) = tail else {
        return states.iter().fold(0, |all, &state| all | state);
    };
    let words = states
        .as_chunks::<8>()
        .0
        .iter()
        .fold(u64::from_ne_bytes(*tail), |all, chunk| all | u64::from_ne_bytes(*chunk));
    words.to_ne_bytes().iter().fold(0, |all, &state| all | state)
}

/// Each byte of `states` and'ed with `and` and then or'ed with `or`, eight at a time as in [`or_all`] (doing it
/// twice to a byte changes nothing either).
fn mask_all(states: &mut [u8], and: u8, or: u8) {
    let len = states.len();
    if len < 8 {
        states.iter_mut().for_each(|state| *state = (*state & and) | or);
        return;
    }
    let (and, or) = (u64::from_ne_bytes([and; 8]), u64::from_ne_bytes([or; 8]));
    for chunk in states.as_chunks_mut::<8>().0 {
        *chunk = ((u64::from_ne_bytes(*chunk) & and) | or).to_ne_bytes();
    }
    if let Ok(tail) = <&mut [u8; 8]>::try_from(&mut states[len - 8..]) {
        *tail = ((u64::from_ne_bytes(*tail) & and) | or).to_ne_bytes();
    }
}

/// A set of address pages as bits, searched a word at a time.
#[derive(Debug, Clone, Default)]
struct Bits {
    words: Vec<u64>,
}

/// The bits `low..=high` of a word (`low <= high < 64`).
fn bits(low: u32, high: u32) -> u64 {
    (!0u64 >> (63 - high)) & (!0u64 << low)
}

impl Bits {
    /// Makes room for numbers below `len` (new numbers are not members).
    fn cover(&mut self, len: usize) {
        grow_books(&mut self.words, len.div_ceil(64), 0);
    }

    #[cfg(any(test, feature = "check"))]
    fn contains(&self, page: u32) -> bool {
        self.words[page as usize >> 6] >> (page & 63) & 1 != 0
    }

    /// Adds (`on`) or removes `page`.
    fn set(&mut self, page: u32, on: bool) {
        let (word, bit) = (&mut self.words[page as usize >> 6], 1 << (page & 63));
        *word = if on { *word | bit } else { *word & !bit };
    }

    /// How many numbers of `low..=high` (`low <= high`) are not members.
    fn absent_in(&self, low: u32, high: u32) -> u32 {
        let (mut word, last) = (low as usize >> 6, high as usize >> 6);
        let mut absent = (!self.words[word] & (!0 << (low & 63))).count_ones();
        while word < last {
            word += 1;
            absent += (!self.words[word]).count_ones();
        }
        absent - (!self.words[last] & !bits(0, high & 63)).count_ones()
    }

    /// Adds (`on`) or removes every number of `low..=high`, a word at a time.
    fn set_range(&mut self, low: u32, high: u32, on: bool) {
        let (first, last) = (low as usize >> 6, high as usize >> 6);
        for word in first..=last {
            let from = if word == first { low & 63 } else { 0 };
            let to = if word == last { high & 63 } else { 63 };
            if on {
                self.words[word] |= bits(from, to);
            } else {
                self.words[word] &= !bits(from, to);
            }
        }
    }

    /// The highest number of `low..=high` that is not a member.
    fn highest_absent_in(&self, low: u32, high: u32) -> Option<u32> {
        let (first, mut word) = (low as usize >> 6, high as usize >> 6);
        let mut absent = !self.words[word] & bits(0, high & 63);
        loop {
            if word == first {
                absent &= !0 << (low & 63);
            }
            if absent != 0 {
                return Some((word as u32) << 6 | (63 - absent.leading_zeros()));
            }
            if word == first {
                return None;
            }
            word -= 1;
            absent = !self.words[word];
        }
    }

    /// The lowest number of `low..=high` that is not a member.
    fn lowest_absent_in(&self, low: u32, high: u32) -> Option<u32> {
        let (mut word, last) = (low as usize >> 6, high as usize >> 6);
        let mut absent = !self.words[word] & (!0 << (low & 63));
        loop {
            if word == last {
                absent &= bits(0, high & 63);
            }
            if absent != 0 {
                return Some((word as u32) << 6 | absent.trailing_zeros());
            }
            if word == last {
                return None;
            }
            word += 1;
            absent = !self.words[word];
        }
    }
}

impl PhysicalPages {
    /// An id for a new physical page (not alive yet, not in use), as [`PhysicalPages::new_ids`] hands them out:
    /// for tests.
    #[cfg(test)]
    fn new_id(&mut self) -> u32 {
        let mut ids = Vec::new();
        self.new_ids(1, false, &mut ids);
        ids[0]
    }

    /// `count` new physical pages (not alive yet), in use (`in_use`, a request's own) or not (pages mapped
    /// ahead), pushed to `ids`: spare ids first (the last one spared first), then ids past the last, their records
    /// made in one go.
    fn new_ids(&mut self, count: usize, in_use: bool, ids: &mut Vec<u32>) {
        let spared = count.min(self.spare_ids.len());
        for _ in 0..spared {
            let id = self.spare_ids.pop().unwrap_or_default();
            if in_use {
                self.states.take(id);
            }
            ids.push(id);
        }
        let (start, fresh) = (self.ids.len(), count - spared);
        grow_books(&mut self.ids, start + fresh, PhysicalPage::NEW);
        self.states.cover(self.ids.len());
        let (start, end) = (start as u32, (start + fresh) as u32);
        if in_use && fresh > 0 {
            self.states.take_range(start, end - 1, true);
        }
        ids.extend(start..end);
    }

    /// Puts physical page `id` in use unless it is already: a free page (alive, not in use) leaves the free count;
    /// a new one (not mapped yet) has no count to leave.
    fn take(&mut self, id: u32) {
        if !self.states.in_use(id) {
            self.free_count -= u64::from(self.ids[id as usize].mappings > 0);
            self.states.take(id);
        }
    }

    /// Makes physical page `id` (alive, or being mapped now) free, queued behind the others unless an older entry
    /// of it is still queued.
    fn release(&mut self, id: u32) {
        self.states.release(id, &mut self.free_queue);
        self.free_count += 1;
    }

    /// After an allocation's free: a user fewer on each of pages `first..=last` (`users`, mapped as `mapped`),
    /// and the physical pages of those left without one [released](PhysicalPages::release), lowest page first.
    /// The pages between the first and the last had the allocation as their only user; the first and last may
    /// keep others (neighbours). A run of pages showing consecutive physical pages (`joined`) is released eight
    /// flags at a time; a window of short runs a page at a time (see [`LONG_RUN`]).
    fn leave_range(&mut self, mapped: &[u32], users: &mut [u32], joined: &Bits, first: usize, last: usize) {
        if by_runs(joined, first, last) {
            self.leave_runs(mapped, users, joined, first, last);
        } else {
            self.leave_pages(mapped, users, first, last);
        }
    }

    /// [`PhysicalPages::leave_range`] a page at a time.
    fn leave_pages(&mut self, mapped: &[u32], users: &mut [u32], first: usize, last: usize) {
        // Split borrows and a local count, so that the queue's length and the count stay in registers.
        let (states, queue) = (&mut self.states, &mut self.free_queue);
        let mut freed = 0;
        for (users, &mapped) in users[first..=last].iter_mut().zip(&mapped[first..=last]) {
            *users -= 1;
            if *users == 0 {
                states.release(mapped - 1, queue);
                freed += 1;
            }
        }
        self.free_count += freed;
    }

    /// [`PhysicalPages::leave_range`] a run of pages showing consecutive physical pages at a time.
    fn leave_runs(&mut self, mapped: &[u32], users: &mut [u32], joined: &Bits, first: usize, last: usize) {
        users[first..=last].iter_mut().for_each(|users| *users -= 1);
        let kept = (users[first] > 0, users[last] > 0);
        debug_assert!(last <= first || users[first + 1..last].iter().all(|&users| users == 0));
        let mut bottom = first;
        loop {
            let top = run_end(joined, bottom, last);
            let id_top = mapped[top] - 1;
            if let Some((low, high)) = run_ids((bottom, top), id_top, (first, last), kept) {
                // Queued behind the others, but for those whose older entries are still queued.
                self.states.release_range(low, high, &mut self.free_queue);
                self.free_count += u64::from(high - low + 1);
            }
            if top == last {
                break;
            }
            bottom = top + 1;
        }
    }

    /// Counts one free page fewer (the page's queue entry goes stale and is skipped when met).
    fn remove_free(&mut self) {
        self.free_count -= 1;
    }

    fn is_free(&self, id: u32) -> bool {
        self.ids[id as usize].mappings > 0 && !self.states.in_use(id)
    }

    /// For pages `first..=last` in turn, the first free page in queue order, put in use, until none is left
    /// (stale entries in front of it are dropped, and an exhausted queue is emptied). The entry of the last page
    /// taken stays at the head until the next look drops it (a page freed again meanwhile keeps that place); the
    /// others go at once, as the next look would drop them. The queue's head and the free count stay in locals.
    /// Pushes the ids to `ids`; returns how many pages got one.
    fn take_first_free(&mut self, first: usize, last: usize, ids: &mut Vec<u32>) -> usize {
        let (mut head, mut taken) = (self.queue_head, 0);
        let wanted = last + 1 - first;
        while taken < wanted {
            let Some(&id) = self.free_queue.get(head) else {
                self.free_queue.clear();
                head = 0;
                break;
            };
            if self.ids[id as usize].mappings == 0 || self.states.in_use(id) {
                // Stale: used or dead since it was queued.
                head += 1;
                self.states.unqueue(id);
                continue;
            }
            self.states.take(id);
            taken += 1;
            ids.push(id);
            if taken < wanted {
                head += 1;
                self.states.unqueue(id);
            }
        }
        self.queue_head = head;
        self.free_count -= taken as u64;
        taken
    }

    /// Drops the entries before the queue's head once they are half the vector (amortized O(1) per entry).
    fn compact_queue(&mut self) {
        if self.queue_head >= 64 && self.queue_head * 2 >= self.free_queue.len() {
            self.free_queue.drain(..self.queue_head);
            self.queue_head = 0;
        }
    }

    /// The queue's entries, front first (stale ones included).
    fn queued(&self) -> &[u32] {
        &self.free_queue[self.queue_head..]
    }

    /// Up to `count` free pages, in queue order.
    fn free_pages(&self, count: usize) -> impl Iterator<Item = u32> + '_ {
        self.queued().iter().copied().filter(|&id| self.is_free(id)).take(count)
    }

    /// A fresh epoch for a range check.
    fn next_epoch(&mut self) -> u16 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.ids.iter_mut().for_each(|page| page.stamp = 0);
            self.epoch = 1;
        }
        self.epoch
    }
}

/// Whether the eight ids `ids` are `expected` and the seven after it: the mismatches or'ed together, without an
/// exit inside the eight, so that the check vectorizes.
#[inline]
fn shows_eight_from(ids: &[u32], expected: u32) -> bool {
    let ids: &[u32; 8] = ids.try_into().unwrap_or(&[u32::MAX; 8]);
    (0..8).fold(0, |diff, k| diff | (ids[k] ^ expected.wrapping_add(k as u32))) == 0
}

/// Whether address page `page` shows the physical page after the one page `page - 1` shows (both mapped): the
/// bit `joined` holds for it.
#[cfg(any(test, feature = "check"))]
fn joins(mapped: &[u32], page: usize) -> bool {
    page > 0 && mapped[page - 1] != 0 && mapped[page] == mapped[page - 1] + 1
}

/// The lowest page of `first..=top` from which the pages up to `top` show consecutive physical pages (`joined`).
fn run_start(joined: &Bits, first: usize, top: usize) -> usize {
    if top == first {
        return first;
    }
    joined.highest_absent_in(first as u32 + 1, top as u32).map_or(first, |page| page as usize)
}

/// The highest page of `bottom..=last` up to which the pages from `bottom` show consecutive physical pages.
fn run_end(joined: &Bits, bottom: usize, last: usize) -> usize {
    if bottom == last {
        return last;
    }
    joined.lowest_absent_in(bottom as u32 + 1, last as u32).map_or(last, |page| page as usize - 1)
}

/// The ids of the pages `bottom..=top` of a window `first..=last` (a run of consecutive ids, `top` showing
/// `id_top`), leaving out the window's first and last page where `edges` says they have users of their own: the
/// lowest and highest, or None when no page is left.
fn run_ids(
    (bottom, top): (usize, usize),
    id_top: u32,
    (first, last): (usize, usize),
    edges: (bool, bool),
) -> Option<(u32, u32)> {
    let low = bottom + usize::from(bottom == first && edges.0);
    let end = top + 1 - usize::from(top == last && edges.1);
    (low < end).then(|| (id_top - (top - low) as u32, id_top - (top + 1 - end) as u32))
}

/// A mapping's bookkeeping, apart so that the compiler knows the queue and the pages' records apart: address
/// pages from `first` on (`mapped`, `next_alias`) are mapped to `ids` in turn and joined to each id's list of
/// mappings; ids mapped for the first time are born, and those past the request's `own` pages (new pages
/// mapped ahead, not in use) are free and queued. Returns the pages born and those of them free.
#[allow(clippy::too_many_arguments)]
fn link_mappings(
    records: &mut [PhysicalPage],
    states: &mut States,
    queue: &mut Vec<u32>,
    ids: &[u32],
    own: usize,
    first: usize,
    mapped: &mut [u32],
    next_alias: &mut [u32],
) -> (u64, u64) {
    let (mut born, mut born_free) = (0, 0);
    for (((index, &id), mapped), next_alias) in ids.iter().enumerate().zip(mapped).zip(next_alias) {
        let physical = &mut records[id as usize];
        *mapped = id + 1;
        *next_alias = physical.first_alias;
        physical.first_alias = (first + index) as u32;
        physical.mappings += 1;
        if physical.mappings == 1 {
            born += 1;
            if index >= own {
                // A new page ahead of the request: free.
                states.release(id, queue);
                born_free += 1;
            }
        }
    }
    (born, born_free)
}

/// What a page of a request's range needs before the request can use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageNeed {
    /// Nothing: mapped to a physical page that is free or already this page's.
    Ready,
    /// A mapping.
    Unmapped,
    /// Mapped to a physical page that another address page uses (or another page of the range shows): it must
    /// be unmapped first.
    Conflict,
}

/// What page `page` of a range needs (`users` its users), the higher pages of the range having been stamped with
/// `epoch`.
fn page_need(mapped: &[u32], users: &[u32], phys: &mut PhysicalPages, page: usize, epoch: u16) -> PageNeed {
    need_of(mapped[page], users[page], phys, epoch)
}

/// [`page_need`] for a page mapped to `mapped` (the physical page plus one, 0: unmapped) with `users` users.
fn need_of(mapped: u32, users: u32, phys: &mut PhysicalPages, epoch: u16) -> PageNeed {
    let Some(id) = mapped.checked_sub(1) else { return PageNeed::Unmapped };
    // A page with users uses its physical page; one without whose physical page is in use shows another's.
    if users == 0 && phys.states.in_use(id) {
        return PageNeed::Conflict;
    }
    // Only a page mapped at several addresses can show twice in one range.
    let physical = &mut phys.ids[id as usize];
    if physical.mappings > 1 {
        if physical.stamp == epoch {
            return PageNeed::Conflict;
        }
        physical.stamp = epoch;
    }
    PageNeed::Ready
}

/// `value` rounded up to `alignment` (a power of two, as the ranges check before they show a range), if that
/// fits: a mask, where the placement closures would otherwise divide on every range they look at.
fn align_up(value: u64, alignment: u64) -> Option<u64> {
    Some(value.checked_add(alignment - 1)? & !(alignment - 1))
}

/// The highest page of `[first, last]` a request cannot use as it is (see [`PageNeed`]).
fn highest_unready(
    mapped: &[u32],
    users: &[u32],
    phys: &mut PhysicalPages,
    first: usize,
    last: usize,
) -> Option<usize> {
    let epoch = phys.next_epoch();
    let window = mapped[first..=last].iter().zip(&users[first..=last]);
    window
        .zip(first..last + 1)
        .rev()
        .find(|&((&mapped, &users), _)| need_of(mapped, users, phys, epoch) != PageNeed::Ready)
        .map(|(_, page)| page)
}

/// Makes pages `[first, last]` a request's if it can use every one as it is: [`highest_unready`] and the taking
/// in one pass. A window lies in a free range, so only its first and last page can have users (the allocations
/// next to it), whose physical pages are theirs already; every other page needs a physical page not in use. The
/// window is looked at from the top down, a run of pages showing consecutive physical pages (`joined`) at a time,
/// their flags checked and set eight at a time, or, where the runs are short (see [`LONG_RUN`]), a page at a
/// time, so that a physical page shown twice in the window is met the second time in use: not ready, as the stamps
/// of [`highest_unready`] would have found it. At the first page that is not ready, the pages taken so far are
/// given back and that page, the highest not ready, is the error. Otherwise each page counts a user more.
fn claim(
    mapped: &[u32],
    users: &mut [u32],
    joined: &Bits,
    phys: &mut PhysicalPages,
    first: usize,
    last: usize,
) -> Result<(), usize> {
    if by_runs(joined, first, last) {
        claim_runs(mapped, users, joined, phys, first, last)
    } else {
        claim_pages(mapped, users, phys, first, last)
    }
}

/// [`claim`] a run of pages showing consecutive physical pages at a time.
fn claim_runs(
    mapped: &[u32],
    users: &mut [u32],
    joined: &Bits,
    phys: &mut PhysicalPages,
    first: usize,
    last: usize,
) -> Result<(), usize> {
    let edges = (users[first] > 0, users[last] > 0);
    debug_assert!(last <= first || users[first + 1..last].iter().all(|&users| users == 0));
    let (mut top, mut taken) = (last, 0);
    // The page not ready and the top of its run.
    let failed = loop {
        let Some(id_top) = mapped[top].checked_sub(1).filter(|&id| (id as usize) < phys.ids.len()) else {
            break Some((top, top));
        };
        let bottom = run_start(joined, first, top);
        if let Some((low, high)) = run_ids((bottom, top), id_top, (first, last), edges) {
            if let Some(id) = phys.states.highest_in_use(low, high) {
                break Some((top - (id_top - id) as usize, top));
            }
            phys.states.take_range(low, high, true);
            taken += u64::from(high - low + 1);
        }
        if bottom == first {
            break None;
        }
        top = bottom - 1;
    };
    if let Some((page, run_top)) = failed {
        // The runs above the one that failed were taken: the same runs, given back.
        let mut top = last;
        while top > run_top {
            let bottom = run_start(joined, run_top + 1, top);
            if let Some((low, high)) = run_ids((bottom, top), mapped[top] - 1, (first, last), edges) {
                phys.states.take_range(low, high, false);
            }
            top = bottom - 1;
        }
        return Err(page);
    }
    users[first..=last].iter_mut().for_each(|users| *users += 1);
    // Mapped pages are alive: each taken one was free.
    phys.free_count -= taken;
    Ok(())
}

/// [`claim`] on a short window, a page at a time: each page is counted a user more as it is met, so that the
/// common case, success, takes one pass.
fn claim_pages(
    mapped: &[u32],
    users: &mut [u32],
    phys: &mut PhysicalPages,
    first: usize,
    last: usize,
) -> Result<(), usize> {
    let states = &mut phys.states.states[..];
    let (mut taken, mut failed) = (0, None);
    let window = mapped[first..=last].iter().zip(users[first..=last].iter_mut());
    for ((&mapped, users), page) in window.zip(first..last + 1).rev() {
        if *users == 0 {
            // Unmapped (an id past every state) or in use: not ready.
            match states.get_mut(mapped.wrapping_sub(1) as usize) {
                Some(state) if *state & IN_USE == 0 => *state |= IN_USE,
                _ => {
                    failed = Some(page);
                    break;
                }
            }
            taken += 1;
        }
        *users += 1;
    }
    if let Some(page) = failed {
        for page in page + 1..=last {
            users[page] -= 1;
            if users[page] == 0 {
                phys.states.untake(mapped[page] - 1);
            }
        }
        return Err(page);
    }
    phys.free_count -= taken;
    Ok(())
}

/// Whether page `page` cannot be used as it is (unmapped, or showing a physical page another address page uses),
/// leaving aside a physical page shown twice in one range.
fn unready_alone(mapped: &[u32], users: &[u32], phys: &PhysicalPages, page: usize) -> bool {
    mapped[page].checked_sub(1).is_none_or(|id| phys.states.in_use(id) && users[page] == 0)
}

/// The highest page of `from..=last` that [`unready_alone`] finds, the pages looked at from the top down a run of
/// consecutive physical pages (`joined`) at a time, each page looked at costing one of `budget` as it would a
/// page at a time: `Err` (the budget spent) when it runs out before the answer. The pages lie in a free range, so only
/// `from` and `last` can have users.
fn highest_unready_by_runs(
    mapped: &[u32],
    users: &[u32],
    joined: &Bits,
    phys: &PhysicalPages,
    from: usize,
    last: usize,
    budget: &mut usize,
) -> Result<Option<usize>, ()> {
    let edges = (users[from] > 0, users[last] > 0);
    debug_assert!(last <= from || users[from + 1..last].iter().all(|&users| users == 0));
    let mut top = last;
    loop {
        let (bottom, found) = match mapped[top].checked_sub(1) {
            None => (top, Some(top)),
            Some(id_top) => {
                let bottom = run_start(joined, from, top);
                let in_use = run_ids((bottom, top), id_top, (from, last), edges)
                    .and_then(|(low, high)| phys.states.highest_in_use(low, high));
                (bottom, in_use.map(|id| top - (id_top - id) as usize))
            }
        };
        let looked = top + 1 - found.unwrap_or(bottom);
        let Some(left) = budget.checked_sub(looked) else {
            // A page at a time, the budget would have been spent on the pages looked at before the answer.
            *budget = 0;
            return Err(());
        };
        *budget = left;
        if found.is_some() || bottom == from {
            return Ok(found);
        }
        top = bottom - 1;
    }
}

/// The region at the low end of a heap's address range where small requests go
/// ([`VirtualHeapConfig::with_small_below`]). Its pages are the heap's like any others; only the ranges are its own.
#[derive(Debug)]
struct SmallRegion {
    ranges: VirtualBlock<Box<AllocationMeta>>,
    /// The heap's range that holds the region's addresses, from its start: never freed.
    carrier: u64,
    /// Requests below this many bytes go here while it has room.
    below: u64,
    /// The region's first page counts a user more than its allocations, from the first allocation on it until
    /// the heap is trimmed: it stays the region's when every small request on it is freed, instead of becoming a
    /// free page that a large request elsewhere takes (the next small request would then unmap it and map
    /// another: two driver calls each time a heap's few small tensors come and go).
    holds_first_page: bool,
}

impl SmallRegion {
    /// A region of up to [`VirtualHeapConfig::SMALL_REGION_BYTES`] (at most a quarter of `capacity`, in whole
    /// pages) taken from the start of the fresh `ranges`; None when the config wants none or no page fits.
    fn new(
        ranges: &mut VirtualBlock<Box<AllocationMeta>>,
        capacity: u64,
        page_size: u64,
        config: &VirtualHeapConfig,
    ) -> Option<SmallRegion> {
        let size = (VirtualHeapConfig::SMALL_REGION_BYTES.min(capacity / 4) / page_size) * page_size;
        if config.small_below_bytes == 0 || size == 0 {
            return None;
        }
        let own = VirtualBlock::with_config(
            VirtualBlockConfig::new(size).with_min_granularity(config.min_granularity),
        )
        .ok()?;
        let carrier = ranges.allocate(size, page_size, ResourceClass::Unknown).ok()?;
        // A fresh block places its first range at its start.
        debug_assert_eq!(carrier.offset, 0);
        Some(SmallRegion {
            ranges: own,
            carrier: carrier.handle.to_raw(),
            below: config.small_below_bytes,
            holds_first_page: false,
        })
    }
}

/// One memory type's virtual heap. Not thread-safe by itself; the allocator wraps it in a lock.
pub(crate) struct VirtualHeap<V: VirtualMemory> {
    reservation: Option<V::Reservation>,
    ranges: VirtualBlock<Box<AllocationMeta>>,
    page_shift: u32,
    /// Per address page: live allocations touching it.
    page_users: Vec<u32>,
    /// Per address page: the physical page mapped there, plus one (0: unmapped).
    mapped: Vec<u32>,
    /// Per mapped address page: the next address page mapped to the same physical page (NIL: the last).
    next_alias: Vec<u32>,
    /// The address pages that show the physical page after the one the page before them shows ([`joins`]): runs
    /// of consecutive physical pages, found a word at a time.
    joined: Bits,
    /// One past the highest mapped address page (0 when none is).
    mapped_end: usize,
    /// Address pages in the reservation; the per-page vectors grow towards it as pages are used.
    page_count: usize,
    phys: PhysicalPages,
    release: Arc<dyn ReleasePolicy>,
    stats: VirtualHeapStats,
    diagnostics: HeapDiagnostics,
    /// Page events since the last `take_events`, when recording is on.
    events: Option<Vec<PageRecord>>,
    /// Page events of the current operation, for the allocator's event ring (when `observe` is on).
    pending: Vec<PageEvent>,
    observe: bool,
    /// The growing replacement series, when watched.
    series: Option<GrowthSeries>,
    /// Mappings past which `unmap_stale` looks for stale ones again (0: the bound alone decides).
    stale_check_at: u64,
    /// The release policy's [`ReleasePolicy::keeps_free_pages_within_peak`].
    keeps_within_peak: bool,
    /// `make_ready`'s list of what each page needs, kept between calls so that a mapping allocates nothing
    /// here.
    needs: Vec<PageNeed>,
    /// `map_run`'s list of physical page ids, kept between calls.
    map_ids: Vec<u32>,
    /// Allocations since the last free ([`HeapState::run_allocations`]).
    run_allocations: u64,
    /// Allocations made in all, freed ones included ([`HeapState::allocations`]).
    allocations_made: u64,
    /// A mapping raised the peak committed bytes since the last allocation was placed: the allocation being
    /// placed records what the peak holds ([`VirtualHeapStats::live_bytes_at_peak`]).
    peak_raised: bool,
    /// Where small requests go, when they go apart.
    small: Option<SmallRegion>,
    /// The rest of the heap this one is a tier of, as the release policy sees it.
    outside: Outside,
}

/// The other tiers of a heap in tiers, as one tier's release policy sees them: their committed, live and
/// allocated bytes, the allocations they made, and the peaks of the whole heap.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Outside {
    pub committed_bytes: u64,
    pub live_bytes: u64,
    pub allocated_bytes: u64,
    pub allocations: u64,
    pub peak_committed_bytes: u64,
    pub peak_live_bytes: u64,
}

impl<V: VirtualMemory> fmt::Debug for VirtualHeap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualHeap").field("stats", &self.stats()).finish_non_exhaustive()
    }
}

/// Where an allocation landed in a virtual heap.
#[derive(Debug)]
pub(crate) struct VirtualPlacement {
    pub handle: Handle,
    pub offset: u64,
}

impl<V: VirtualMemory> VirtualHeap<V> {
    /// Reserves `size` bytes (rounded up to the page size) of address space for `memory_type`.
    pub fn new(
        vm: &V,
        memory_type: u32,
        size: u64,
        page_size: u64,
        config: &VirtualHeapConfig,
    ) -> Result<VirtualHeap<V>, DeviceError> {
        if !page_size.is_power_of_two() {
            return Err(DeviceError::Unsupported("virtual memory page size is not a power of two"));
        }
        let size = size
            .max(page_size)
            .checked_next_multiple_of(page_size)
            .ok_or(DeviceError::Unsupported("reservation too large"))?;
        let pages = usize::try_from(size >> page_size.trailing_zeros())
            .ok()
            .filter(|&pages| pages < NIL as usize)
            .ok_or(DeviceError::Unsupported("reservation too large"))?;
        let mut ranges = VirtualBlock::with_config(
            VirtualBlockConfig::new(size).with_min_granularity(config.min_granularity),
        )
        .map_err(|_| DeviceError::Unsupported("invalid virtual heap granularity"))?;
        let small = SmallRegion::new(&mut ranges, size, page_size, config);
        // SAFETY: (1) `memory_type` is valid and `vm.granularity(memory_type)` returned Some (the caller's page size
        // is that granularity or a multiple of it the caller checked against it; the device refuses one it cannot
        // use).
        let reservation = unsafe { vm.reserve(memory_type, size, page_size)? };
        Ok(VirtualHeap {
            reservation: Some(reservation),
            ranges,
            page_shift: page_size.trailing_zeros(),
            page_users: Vec::new(),
            mapped: Vec::new(),
            next_alias: Vec::new(),
            joined: Bits::default(),
            mapped_end: 0,
            page_count: pages,
            phys: PhysicalPages {
                ids: Vec::with_capacity(FIRST_PAGES),
                free_queue: Vec::with_capacity(FIRST_PAGES),
                states: States { states: Vec::with_capacity(FIRST_PAGES) },
                ..PhysicalPages::default()
            },
            release: Arc::clone(&config.release),
            stats: VirtualHeapStats::default(),
            diagnostics: HeapDiagnostics::default(),
            events: None,
            pending: Vec::new(),
            observe: false,
            series: config.growing_series.then(GrowthSeries::default),
            stale_check_at: 0,
            keeps_within_peak: config.release.keeps_free_pages_within_peak(),
            needs: Vec::with_capacity(FIRST_PAGES),
            map_ids: Vec::with_capacity(FIRST_PAGES),
            run_allocations: 0,
            allocations_made: 0,
            peak_raised: false,
            small,
            outside: Outside::default(),
        })
    }

    /// The counters, with the committed and empty bytes read off the physical pages' books.
    pub fn stats(&self) -> VirtualHeapStats {
        VirtualHeapStats {
            committed_bytes: self.committed_bytes(),
            empty_bytes: self.empty_bytes(),
            ..self.stats
        }
    }

    /// Bytes committed now ([`VirtualHeapStats::committed_bytes`] alone).
    pub(crate) fn committed_bytes(&self) -> u64 {
        self.phys.alive << self.page_shift
    }

    /// Bytes of committed pages no live allocation touches ([`VirtualHeapStats::empty_bytes`] alone).
    pub(crate) fn empty_bytes(&self) -> u64 {
        self.phys.free_count << self.page_shift
    }

    /// Bytes of live allocations.
    pub(crate) fn live_bytes(&self) -> u64 {
        self.stats.live_bytes
    }

    /// Bytes handed out so far, freed ones included.
    pub(crate) fn allocated_bytes(&self) -> u64 {
        self.stats.allocated_bytes
    }

    /// Allocations made so far, freed ones included.
    pub(crate) fn allocations_made(&self) -> u64 {
        self.allocations_made
    }

    /// The allocator's counters of this heap.
    pub(crate) fn diagnostics(&self) -> HeapDiagnostics {
        self.diagnostics
    }

    /// Starts a new diagnostics window: no reuses, high-water marks at the current values.
    pub(crate) fn reset_diagnostics(&mut self) {
        self.diagnostics = HeapDiagnostics {
            reuses: 0,
            peak_allocations: self.stats.allocations,
            peak_live_bytes: self.stats.live_bytes,
        };
    }

    /// Starts (or stops) recording page events.
    pub fn record_events(&mut self, on: bool) {
        self.events = on.then(Vec::new);
    }

    /// Also collects page events for the allocator's event ring (drained with `drain_pending`).
    pub fn observe(&mut self, on: bool) {
        self.observe = on;
    }

    /// Page events of the operations since the last call (when observing).
    pub fn drain_pending(&mut self) -> std::vec::Drain<'_, PageEvent> {
        self.pending.drain(..)
    }

    /// Attaches tracking data to a live allocation.
    pub fn set_meta(&mut self, handle: &Handle, meta: Box<AllocationMeta>) {
        let _ = self.ranges_of(handle).set_user_data(handle, meta);
    }

    /// Whether `handle` came from this heap (its ranges or its small region's).
    pub(crate) fn owns(&self, handle: &Handle) -> bool {
        self.ranges.owns(handle) || self.small.as_ref().is_some_and(|small| small.ranges.owns(handle))
    }

    /// The ranges that made `handle`: the small region's or the heap's.
    fn ranges_of(&mut self, handle: &Handle) -> &mut VirtualBlock<Box<AllocationMeta>> {
        match self.small.as_mut() {
            Some(small) if small.ranges.owns(handle) => &mut small.ranges,
            _ => &mut self.ranges,
        }
    }

    /// Every live allocation's range (the small region's carrier is not one).
    fn live_ranges(
        &self,
    ) -> impl Iterator<Item = memcarve_core::AllocationInfo<'_, Box<AllocationMeta>>> + '_ {
        let carrier = self.small.as_ref().map(|small| small.carrier);
        let small = self.small.as_ref().into_iter().flat_map(|small| small.ranges.iter());
        self.ranges.iter().filter(move |info| Some(info.raw_handle) != carrier).chain(small)
    }

    /// Every live allocation, for leak reports.
    pub fn leaks(&self, memory_type: u32, out: &mut Vec<Leak>) {
        out.extend(self.live_ranges().map(|info| {
            Leak::from_meta(info.user_data.map(|m| &**m), info.size, memory_type, ResourceClass::Unknown)
        }));
    }

    /// Page events recorded since the last call.
    pub fn take_events(&mut self) -> Vec<PageRecord> {
        self.events.as_mut().map(core::mem::take).unwrap_or_default()
    }

    pub(crate) fn page_size(&self) -> u64 {
        1 << self.page_shift
    }

    /// Bytes the ranges hold for a request of `size`: rounded up to the heap's granularity.
    fn span(&self, size: u64) -> u64 {
        size.next_multiple_of(self.ranges.config().min_granularity)
    }

    /// Pages `[first, last]` touched by `[offset, offset + size)`.
    fn pages(&self, offset: u64, size: u64) -> (usize, usize) {
        ((offset >> self.page_shift) as usize, ((offset + size - 1) >> self.page_shift) as usize)
    }

    fn state(&self) -> HeapState {
        let stats = self.stats();
        let outside = self.outside;
        let live = self.stats.live_bytes + outside.live_bytes;
        HeapState {
            committed_bytes: stats.committed_bytes + outside.committed_bytes,
            empty_bytes: stats.empty_bytes,
            live_bytes: live,
            peak_committed_bytes: self.stats.peak_committed_bytes.max(outside.peak_committed_bytes),
            peak_live_bytes: self.stats.peak_live_bytes.max(outside.peak_live_bytes).max(live),
            page_size: self.page_size(),
            allocated_bytes: self.stats.allocated_bytes + outside.allocated_bytes,
            run_allocations: self.run_allocations,
            allocations: self.allocations_made + outside.allocations,
            request_bytes: 0,
        }
    }

    /// What the release policy is to see of the rest of the heap this one is a tier of (see
    /// [`crate::heap_tiers`]): the other tiers' committed, live and allocated bytes, and the whole heap's peaks.
    pub(crate) fn set_outside(&mut self, outside: Outside) {
        self.outside = outside;
    }

    /// Grows the per-page vectors to cover pages below `end`, from [`FIRST_PAGES`] (see [`grow_books`]).
    fn cover_pages(&mut self, end: usize) {
        if end <= self.mapped.len() {
            return;
        }
        let len = end.max(FIRST_PAGES).min(self.page_count);
        grow_books(&mut self.mapped, len, 0);
        grow_books(&mut self.page_users, len, 0);
        grow_books(&mut self.next_alias, len, 0);
        self.joined.cover(len);
    }

    fn unready(&mut self, first: usize, last: usize) -> bool {
        self.cover_pages(last + 1);
        highest_unready(&self.mapped, &self.page_users, &mut self.phys, first, last).is_some()
    }

    /// Allocates `size` bytes and maps the pages it touches that it cannot use as they are.
    /// With `may_commit` false only pages ready as they are may be used (no driver call): a request that would
    /// need one gets `Ok(None)` (no room), as under `BudgetPolicy::RequireWithin` on an over-budget heap.
    pub fn allocate(
        &mut self,
        vm: &V,
        size: u64,
        alignment: u64,
        may_commit: bool,
    ) -> Result<Option<VirtualPlacement>, DeviceError> {
        // A member of a growing series takes a range rounded up to the series' grid; its pages are the range's.
        let page_size = self.page_size();
        let commits = self.stats.commits;
        let series_range = self.series.as_ref().and_then(|series| series.range(size, page_size));
        let range = series_range.unwrap_or(size);
        // A small request goes to the small region while it has room, its pages mapped there if need be (nothing
        // ahead: only small requests would find it there); failing that, where the others go. A member larger
        // than the oldest live one (which it is about to replace) outgrows the holes the series leaves: the series
        // moves, each member after the previous one on pages mapped ahead for it. Otherwise TLSF's good fit when
        // its pages are ready; otherwise a free range on ready pages, which needs no driver call either (the
        // three take the pages as they check them: see `claim`); otherwise a placement that needs one.
        let small = if series_range.is_none() { self.place_small(size, alignment) } else { None };
        let small = match small {
            Some((allocation, true)) => Some(allocation),
            // Where the pages cannot be mapped (no commits allowed, or the driver refuses), the request may still
            // fit on ready pages elsewhere.
            Some((allocation, false)) => {
                self.take_pages(vm, allocation, size, size, None, may_commit).ok().flatten()
            }
            None => None,
        };
        if let Some(allocation) = &small
            && allocation.offset < page_size
            && let Some(region) = self.small.as_mut()
            && !region.holds_first_page
        {
            // The region's first page: held from now on.
            region.holds_first_page = true;
            self.page_users[0] += 1;
        }
        let outgrowing = series_range.is_some()
            && self
                .series
                .as_ref()
                .and_then(|series| series.members.front())
                .is_some_and(|&(_, oldest)| range > oldest);
        let at_cursor = if outgrowing { self.place_at_cursor(range, alignment) } else { None };
        let moving = at_cursor.is_some();
        let (allocation, found_ready) = match small {
            Some(allocation) => (allocation, true),
            None => match at_cursor.or_else(|| self.place_in_good_fit(range, alignment)) {
                Some(allocation) => (allocation, true),
                None => match self.place_on_ready(range, alignment) {
                    Some(allocation) => (allocation, true),
                    None => match self.place_needing_one_call(vm, range, alignment) {
                        Some(allocation) => (allocation, false),
                        None => return Ok(None),
                    },
                },
            },
        };
        let allocation = if found_ready {
            allocation
        } else {
            let ahead = Some(series_range.is_some());
            match self.take_pages(vm, allocation, range, size, ahead, may_commit)? {
                Some(allocation) => allocation,
                None => return Ok(None),
            }
        };
        self.stats.live_bytes += size;
        self.stats.peak_live_bytes = self.stats.peak_live_bytes.max(self.stats.live_bytes);
        self.stats.allocations += 1;
        self.stats.allocated_bytes += size;
        self.run_allocations += 1;
        self.allocations_made += 1;
        let diagnostics = &mut self.diagnostics;
        diagnostics.reuses += u64::from(self.stats.commits == commits);
        diagnostics.peak_allocations = diagnostics.peak_allocations.max(self.stats.allocations);
        diagnostics.peak_live_bytes = diagnostics.peak_live_bytes.max(self.stats.live_bytes);
        self.note_peak();
        if let Some(series) = self.series.as_mut() {
            series.allocated(allocation.offset, range, size, page_size);
            // A member that moved onto the pages mapped ahead for the series, or took a mapping of them: the
            // next one follows it.
            if series_range.is_some() {
                series.cursor = (outgrowing && (moving || !found_ready)).then_some(allocation.offset + range);
            }
        }
        Ok(Some(VirtualPlacement { handle: allocation.handle, offset: allocation.offset }))
    }

    /// Takes the pages of `allocation` (a range of `range` bytes for a request of `size`), placed where they were
    /// not all found ready: maps what they lack (`ahead` as for [`VirtualHeap::make_ready`]). `Ok(None)` when
    /// that needs a driver call and `may_commit` is false. The range goes back if it is not placed; after an
    /// error nothing else is lost either: pages mapped on the way stay as free pages for the release policy (a
    /// peak they raised holds them empty).
    fn take_pages(
        &mut self,
        vm: &V,
        allocation: memcarve_core::Allocation,
        range: u64,
        size: u64,
        ahead: Option<bool>,
        may_commit: bool,
    ) -> Result<Option<memcarve_core::Allocation>, DeviceError> {
        let (first, last) = self.pages(allocation.offset, self.span(range));
        let mut taken = false;
        if self.unready(first, last) {
            if !may_commit {
                let _ = self.ranges_of(&allocation.handle).free(allocation.handle);
                return Ok(None);
            }
            match self.make_ready(vm, first, last, size, ahead) {
                Ok(made) => taken = made,
                Err(error) => {
                    let _ = self.ranges_of(&allocation.handle).free(allocation.handle);
                    self.note_peak();
                    self.release(vm);
                    return Err(error);
                }
            }
        }
        if taken {
            // Their physical pages are theirs already: only the users are counted.
            self.page_users[first..=last].iter_mut().for_each(|users| *users += 1);
        } else {
            let claimed =
                claim(&self.mapped, &mut self.page_users, &self.joined, &mut self.phys, first, last);
            debug_assert!(claimed.is_ok(), "every page was found ready");
        }
        Ok(Some(allocation))
    }

    /// After a mapping raised the peak committed bytes: what the peak holds, once the allocation it was for is
    /// placed (or refused).
    fn note_peak(&mut self) {
        if self.peak_raised {
            self.peak_raised = false;
            self.stats.live_bytes_at_peak = self.stats.live_bytes;
            self.stats.empty_bytes_at_peak = self.phys.free_count << self.page_shift;
        }
    }

    /// A series member right after the previous one, while the series moves onto the pages mapped ahead for it:
    /// at the series' cursor, in the last free range, if the pages there are ready (O(pages of the request));
    /// its pages taken.
    fn place_at_cursor(&mut self, size: u64, alignment: u64) -> Option<memcarve_core::Allocation> {
        let cursor = self.series.as_ref()?.cursor?;
        let span = self.span(size);
        let shift = self.page_shift;
        let (mapped, users, joined, phys) =
            (&self.mapped[..], &mut self.page_users[..], &self.joined, &mut self.phys);
        let mut claimed = None;
        let place = |start: u64, len: u64| {
            let offset = align_up(cursor, alignment)?;
            let last = ((offset.checked_add(span)? - 1) >> shift) as usize;
            let fits = start <= offset && offset + span <= start + len && last < mapped.len();
            let first = (offset >> shift) as usize;
            (fits && claim(mapped, users, joined, phys, first, last).is_ok()).then(|| {
                claimed = Some((first, last));
                offset
            })
        };
        let placed =
            self.ranges.allocate_at_end_where(size, alignment, ResourceClass::Unknown, place).ok().flatten();
        self.settle_claim(placed.is_some(), claimed);
        if placed.is_none()
            && let Some(series) = self.series.as_mut()
        {
            series.cursor = None;
        }
        placed
    }

    /// A request below the small region's bound in the region's good fit, if the region has room: with whether
    /// its pages were ready (then they are taken).
    fn place_small(&mut self, size: u64, alignment: u64) -> Option<(memcarve_core::Allocation, bool)> {
        let small = self.small.as_mut().filter(|small| size < small.below)?;
        let allocation = small.ranges.allocate(size, alignment, ResourceClass::Unknown).ok()?;
        let (first, last) = self.pages(allocation.offset, self.span(size));
        let ready = last < self.mapped.len()
            && claim(&self.mapped, &mut self.page_users, &self.joined, &mut self.phys, first, last).is_ok();
        Some((allocation, ready))
    }

    /// TLSF's good fit, at its start or, where the start's pages are not ready, at its end, if the pages there
    /// are ready (O(pages of the request)); its pages taken.
    fn place_in_good_fit(&mut self, size: u64, alignment: u64) -> Option<memcarve_core::Allocation> {
        let span = self.span(size);
        let shift = self.page_shift;
        let (mapped, users, joined, phys) =
            (&self.mapped[..], &mut self.page_users[..], &self.joined, &mut self.phys);
        let mut claimed = None;
        let place = |start: u64, len: u64| {
            // Pages past the per-page vectors were never mapped.
            let end = (start + len).min((mapped.len() as u64) << shift);
            // Ok when the window at `offset` is ready (and taken); otherwise the highest page it cannot use, if
            // one was seen.
            let mut check = |phys: &mut PhysicalPages, users: &mut [u32], offset: u64| {
                if offset + span > end {
                    return Err(None);
                }
                let (first, last) = ((offset >> shift) as usize, ((offset + span - 1) >> shift) as usize);
                claim(mapped, users, joined, phys, first, last).map_err(Some)?;
                claimed = Some((first, last));
                Ok(())
            };
            let first = align_up(start, alignment)?;
            let blocked = match check(phys, users, first) {
                Ok(()) => return Some(first),
                Err(page) => page,
            };
            let last = (start + len).checked_sub(span)? & !(alignment - 1);
            if last <= first {
                return None;
            }
            // A good fit is barely longer than the request, so the two windows overlap: a page unusable in itself
            // (not merely shown twice in the first window) that the end window covers too rules it out unseen.
            if blocked.is_some_and(|page| {
                page >= (last >> shift) as usize && unready_alone(mapped, users, phys, page)
            }) {
                return None;
            }
            check(phys, users, last).is_ok().then_some(last)
        };
        let placed = self
            .ranges
            .allocate_good_fit_where(size, alignment, ResourceClass::Unknown, place)
            .ok()
            .flatten();
        self.settle_claim(placed.is_some(), claimed);
        placed
    }

    /// After a placement whose closure took the pages `claimed` (if any): gives them back unless the ranges
    /// placed the request there (they may refuse the closure's answer).
    fn settle_claim(&mut self, placed: bool, claimed: Option<(usize, usize)>) {
        if let Some((first, last)) = claimed
            && !placed
        {
            self.phys.leave_range(&self.mapped, &mut self.page_users, &self.joined, first, last);
        }
    }

    /// Places a request on ready pages only, looking at up to 64 free ranges (smallest first) and, in them, at
    /// up to 8,192 pages in all. In a range, each window the request would cover is checked from its top page
    /// down: an unready page moves the window past it, and pages found ready are not looked at again, so the
    /// search skips ahead by up to a request's length per look. Bounded work; it runs only when TLSF's good fit
    /// would need driver calls. The pages of the placement are taken.
    fn place_on_ready(&mut self, size: u64, alignment: u64) -> Option<memcarve_core::Allocation> {
        const RANGES: usize = 64;
        const PAGES: usize = 8192;
        let span = self.span(size);
        // Every page of a placement but its first and last (which may be shared with a neighbour) needs a free
        // physical page: with fewer free, no search can succeed.
        let pages = span.div_ceil(self.page_size()) + 1;
        if self.phys.free_count + 2 < pages {
            return None;
        }
        let (shift, end) = (self.page_shift, self.mapped_end);
        let (mapped, users, joined, phys) =
            (&self.mapped[..], &mut self.page_users[..], &self.joined, &mut self.phys);
        let mut budget = PAGES;
        let mut claimed: Option<(usize, usize)> = None;
        let place = |start: u64, len: u64| {
            // The ranges refused the last answer: its pages go back.
            if let Some((first, last)) = claimed.take() {
                phys.leave_range(mapped, users, joined, first, last);
            }
            let stop = start + len;
            let first_offset = align_up(start, alignment)?;
            let first_page = (first_offset >> shift) as usize;
            // The window starts on page `low`; pages `[low, verified)` were found ready.
            let (mut low, mut verified) = (first_page, first_page);
            loop {
                let offset = if low == first_page {
                    first_offset
                } else {
                    align_up((low as u64) << shift, alignment)?
                };
                if offset.checked_add(span)? > stop {
                    return None;
                }
                let last = ((offset + span - 1) >> shift) as usize;
                if last >= end {
                    return None;
                }
                // The top page alone first (most windows the search moves past fail there), then the rest by
                // runs where they are long. Apart, not one loop that chooses at the second page: that cost
                // two_stream_train 17 % more instructions a replay, gan_train 12 %.
                let from = verified.max(low);
                let mut unready = None;
                if from <= last {
                    if budget == 0 {
                        return None;
                    }
                    budget -= 1;
                    unready = unready_alone(mapped, users, phys, last).then_some(last);
                }
                if unready.is_none() && from < last {
                    if by_runs(joined, from, last - 1) {
                        unready =
                            highest_unready_by_runs(mapped, users, joined, phys, from, last - 1, &mut budget)
                                .ok()?;
                    } else {
                        for page in (from..last).rev() {
                            if budget == 0 {
                                return None;
                            }
                            budget -= 1;
                            if unready_alone(mapped, users, phys, page) {
                                unready = Some(page);
                                break;
                            }
                        }
                    }
                }
                match unready {
                    Some(page) => {
                        verified = last + 1;
                        low = page + 1;
                    }
                    // Every page is ready; two of them may still show one physical page.
                    None => {
                        let window = (offset >> shift) as usize;
                        match claim(mapped, users, joined, phys, window, last) {
                            Ok(()) => {
                                claimed = Some((window, last));
                                return Some(offset);
                            }
                            Err(page) => {
                                low = page + 1;
                                verified = low;
                            }
                        }
                    }
                }
            }
        };
        let placed =
            self.ranges.allocate_where(size, alignment, ResourceClass::Unknown, RANGES, place).ok().flatten();
        self.settle_claim(placed.is_some(), claimed);
        placed
    }

    /// Places a request that needs driver calls: at TLSF's good fit when that needs at most one (a mapping of
    /// the pages it lacks), otherwise reaching the fresh address pages above every mapped one (from as low as
    /// the ready pages below them allow), where one mapping of the free physical pages (and new ones) serves
    /// it. Fresh pages running out, the mappings no allocation uses are dropped first; failing that, the good
    /// fit it is.
    fn place_needing_one_call(
        &mut self,
        vm: &V,
        size: u64,
        alignment: u64,
    ) -> Option<memcarve_core::Allocation> {
        self.unmap_stale(vm);
        let good = self.ranges.allocate(size, alignment, ResourceClass::Unknown).ok()?;
        let (first, last) = self.pages(good.offset, self.span(size));
        if self.needs_at_most_one_call(first, last) {
            return Some(good);
        }
        let _ = self.ranges.free(good.handle);
        if let Some(fresh) = self.place_fresh(size, alignment) {
            return Some(fresh);
        }
        if self.unmap_unused(vm)
            && let Some(fresh) = self.place_fresh(size, alignment)
        {
            return Some(fresh);
        }
        self.ranges.allocate(size, alignment, ResourceClass::Unknown).ok()
    }

    /// A placement in the last free range, which holds the address pages above every mapped one (the end of the
    /// address range), if it has room: as low in it as the mapped pages below the end are ready, so that a
    /// request starts right after the last allocation when that one's last page has room (at most one mapping,
    /// of the pages above the end, and no page left partly empty between them).
    fn place_fresh(&mut self, size: u64, alignment: u64) -> Option<memcarve_core::Allocation> {
        let span = self.span(size);
        let shift = self.page_shift;
        let top = (self.mapped_end as u64) << shift;
        let (mapped, users, phys) = (&self.mapped[..], &self.page_users[..], &mut self.phys);
        let place = |start: u64, len: u64| {
            let mut low = start;
            if start < top {
                let below =
                    highest_unready(mapped, users, phys, (start >> shift) as usize, self.mapped_end - 1);
                low = below.map_or(start, |page| ((page as u64 + 1) << shift).max(start));
            }
            let offset = align_up(low, alignment)?;
            (offset.checked_add(span)? <= start + len).then_some(offset)
        };
        self.ranges.allocate_at_end_where(size, alignment, ResourceClass::Unknown, place).ok().flatten()
    }

    /// Whether making `[first, last]` ready takes at most one driver call (one mapping per run of pages that
    /// need one, and one unmapping per run of conflicting pages): it stops at the second. The pages at or above
    /// the mapped end are unmapped, one run: only those below it are looked at.
    fn needs_at_most_one_call(&mut self, first: usize, last: usize) -> bool {
        let top = self.mapped_end.clamp(first, last + 1);
        let epoch = self.phys.next_epoch();
        let (mut calls, mut previous) =
            if top <= last { (1, PageNeed::Unmapped) } else { (0, PageNeed::Ready) };
        for page in (first..top).rev() {
            let need = page_need(&self.mapped, &self.page_users, &mut self.phys, page, epoch);
            calls += usize::from(need != PageNeed::Ready && previous == PageNeed::Ready);
            calls += usize::from(need == PageNeed::Conflict && previous != PageNeed::Conflict);
            if calls > 1 {
                return false;
            }
            previous = need;
        }
        true
    }

    /// Makes every page of `[first, last]` ready for a request of `size`: conflicting pages are unmapped (one
    /// call per run), and each run of unmapped pages is mapped in one call, onto free physical pages (in queue
    /// order) and new ones. With `ahead` (Some), the last run also maps the unmapped pages after the request onto
    /// the remaining free physical pages, and onto new ones as far as the release policy's commit-ahead allows,
    /// so that the next requests find ready pages there, and for a member of a growing series (Some(true)) the
    /// physical pages of the live members after those. Returns whether the pages of `[first, last]` are the
    /// request's now (their physical pages' user set), as they are once anything was mapped; false when every
    /// page was ready as it was and none was taken.
    fn make_ready(
        &mut self,
        vm: &V,
        first: usize,
        last: usize,
        size: u64,
        ahead: Option<bool>,
    ) -> Result<bool, DeviceError> {
        // Pages at or above the mapped end are unmapped: only those below it are looked at.
        let looked = self.mapped_end.clamp(first, last + 1);
        let epoch = self.phys.next_epoch();
        let mut needs = core::mem::take(&mut self.needs);
        needs.clear();
        let (mapped, users, phys) = (&self.mapped, &self.page_users, &mut self.phys);
        needs.extend((first..looked).rev().map(|page| page_need(mapped, users, phys, page, epoch)));
        let need = |page: usize| if page < looked { needs[looked - 1 - page] } else { PageNeed::Unmapped };
        if looked > last && (first..=last).all(|page| need(page) == PageNeed::Ready) {
            self.needs = needs;
            return Ok(false);
        }
        let mut page = first;
        while page < looked {
            if need(page) != PageNeed::Conflict {
                page += 1;
                continue;
            }
            let run_first = page;
            while page < looked && need(page) == PageNeed::Conflict {
                page += 1;
            }
            self.unmap_run(vm, run_first, page - 1);
        }
        // The ready pages are this request's from now on, so that no mapping below hands their physical pages
        // to another page of the range.
        let ready = |page: &usize| need(*page) == PageNeed::Ready;
        for page in (first..looked).filter(ready) {
            self.take_page(page);
        }
        let mut page = first;
        let mut result = Ok(());
        while page <= last {
            if self.mapped[page] != 0 {
                page += 1;
                continue;
            }
            let run_first = page;
            page += self.unmapped_from(page, last - page + 1);
            let ahead = ahead.filter(|_| page - 1 == last);
            if let Err(error) = self.map_run(vm, run_first, page - 1, ahead, size) {
                result = Err((run_first, error));
                break;
            }
        }
        if let Err((failed, _)) = result {
            // Nothing stays taken: the ready pages go back, and so do the physical pages the runs before the one
            // that failed mapped for the request (free pages now, for the release policy).
            for page in first..failed {
                if !ready(&page) {
                    self.phys.release(self.mapped[page] - 1);
                }
            }
            for page in (first..looked).filter(ready) {
                self.leave_page(page);
            }
        }
        self.needs = needs;
        result.map(|()| true).map_err(|(_, error)| error)
    }

    /// Maps `[first, last]` (all unmapped) in one call, for a request; `ahead` (Some) also maps the unmapped
    /// pages after `last` onto the free physical pages left and onto new ones within the commit-ahead, and
    /// (Some(true), for a series member) onto the live members' pages after those.
    fn map_run(
        &mut self,
        vm: &V,
        first: usize,
        last: usize,
        ahead: Option<bool>,
        size: u64,
    ) -> Result<(), DeviceError> {
        let count = last - first + 1;
        // The list of ids is kept between calls, so that a mapping allocates nothing here.
        let mut ids = core::mem::take(&mut self.map_ids);
        ids.clear();
        ids.reserve(count);
        // The request's own pages: free physical pages first (they are the request's now), then new ones.
        let reused = self.phys.take_first_free(first, last, &mut ids);
        let created = (count - reused) as u64;
        self.phys.new_ids(count - reused, true, &mut ids);
        self.phys.compact_queue();
        let own = ids.len();
        if let Some(member) = ahead {
            let mut state = self.state();
            // The heap as it will be once the request is placed.
            state.live_bytes += size;
            state.peak_live_bytes = state.peak_live_bytes.max(state.live_bytes);
            state.allocated_bytes += size;
            state.allocations += 1;
            state.committed_bytes += created << self.page_shift;
            state.request_bytes = size;
            let new_pages = self.release.commit_ahead_bytes(&state) >> self.page_shift;
            // Room: unmapped pages after `last`, looked at no further than the pages could fill.
            let cap = AHEAD_ALIASES_PER_PAGE * count as u64;
            // Bounded by the reservation (a policy may ask for any number of pages ahead).
            let wanted = (self.phys.free_count.min(cap).saturating_add(new_pages) as usize)
                .min(self.page_count.saturating_sub(last + 1));
            self.cover_pages(last + 1 + wanted);
            let room = self.unmapped_from(last + 1, wanted);
            let aliased = room.min(cap as usize);
            ids.reserve(room);
            ids.extend(self.phys.free_pages(aliased));
            let new_ahead = (room - (ids.len() - own)).min(new_pages as usize);
            self.phys.new_ids(new_ahead, false, &mut ids);
            // After those, for a series member, the members' pages: the next members will find them free
            // here as their old copies are freed, oldest first (as long as the unmapped pages reach).
            if member {
                let members = self.member_pages(&ids);
                let start = last + 1 + (ids.len() - own);
                self.cover_pages(start + members.len());
                let more = self.unmapped_from(start, members.len());
                ids.extend_from_slice(&members[..more]);
            }
        }
        let offset = (first as u64) << self.page_shift;
        let Some(reservation) = self.reservation.as_ref() else {
            self.forget_ids(&ids, own);
            self.map_ids = ids;
            return Err(DeviceError::Unsupported("virtual heap already released"));
        };
        // SAFETY: (1) the pages are whole pages inside the reservation (pages index it) and unmapped (checked by
        // the caller under `&mut self`, and the pages after `last` are unmapped by `room` and `more`); (2) the ids
        // are below the page count (the heap never has more physical pages than address pages) and distinct (each
        // is either free, and taken off the free list or walked once, or new, or a series member's, stamped once
        // and neither free nor new).
        if let Err(error) = unsafe { vm.map_pages(reservation, offset, &ids) } {
            self.forget_ids(&ids, own);
            self.map_ids = ids;
            return Err(error);
        }
        let end = first + ids.len();
        let (mapped, next_alias) = (&mut self.mapped[first..end], &mut self.next_alias[first..end]);
        let phys = &mut self.phys;
        let (born, born_free) = link_mappings(
            &mut phys.ids,
            &mut phys.states,
            &mut phys.free_queue,
            &ids,
            own,
            first,
            mapped,
            next_alias,
        );
        phys.alive += born;
        phys.free_count += born_free;
        self.rejoin_mapped(first, &ids);
        let size = (ids.len() as u64) << self.page_shift;
        self.mapped_end = self.mapped_end.max(first + ids.len());
        self.stats.mapped_bytes += size;
        self.stats.commits += 1;
        let committed = self.phys.alive << self.page_shift;
        if committed > self.stats.peak_committed_bytes {
            self.stats.peak_committed_bytes = committed;
            self.peak_raised = true;
        }
        self.note(PageEvent::Commit { offset, size }, &ids);
        self.map_ids = ids;
        Ok(())
    }

    /// Sets the [`joins`] bits of pages `first..=end` (within the per-page vectors) after their mappings changed
    /// (page `end` follows them): a word of bits at a time, each made in a register.
    fn rejoin(&mut self, first: usize, end: usize) {
        let end = end.min(self.mapped.len() - 1);
        if first == 0 {
            self.joined.set(0, false);
        }
        let mut page = first.max(1);
        while page <= end {
            let stop = end.min(page | 63);
            let (before, pages) = (&self.mapped[page - 1..stop], &self.mapped[page..=stop]);
            let joined = before.iter().zip(pages).enumerate().fold(0, |joined, (bit, (&before, &mapped))| {
                joined | u64::from(before != 0 && mapped == before + 1) << bit
            });
            let word = &mut self.joined.words[page >> 6];
            let within = bits(page as u32 & 63, stop as u32 & 63);
            *word = (*word & !within) | joined << (page & 63);
            page = stop + 1;
        }
    }

    /// [`VirtualHeap::rejoin`] after pages from `first` on were mapped to `ids`: within the mapping a stretch of
    /// consecutive ids (found eight at a time) has its bits set a word at a time; the first page and the page
    /// after the mapping are looked at alone.
    fn rejoin_mapped(&mut self, first: usize, ids: &[u32]) {
        let end = first + ids.len();
        self.rejoin(first, first);
        let mut start = 0;
        while start < ids.len() {
            // The stretch of ids from `start` on, each one more than the one before.
            let mut stop = start + 1;
            while stop + 8 <= ids.len()
                && shows_eight_from(&ids[stop..stop + 8], ids[start] + (stop - start) as u32)
            {
                stop += 8;
            }
            while stop < ids.len() && ids[stop] == ids[stop - 1] + 1 {
                stop += 1;
            }
            // Pages `first + start + 1 .. first + stop` join the one before; page `first + stop` does not (or is
            // the page after the mapping, looked at below).
            if stop > start + 1 {
                self.joined.set_range((first + start + 1) as u32, (first + stop - 1) as u32, true);
            }
            if stop < ids.len() {
                self.joined.set((first + stop) as u32, false);
            }
            start = stop;
        }
        self.rejoin(end, end);
    }

    /// How many pages from `first` on, up to `count` and within the per-page vectors, are unmapped in a row.
    /// Pages at or above the mapped end are unmapped: only those below it are looked at, so a run above every
    /// mapping (a heap's growth, its pages mapped ahead) is measured in O(1).
    fn unmapped_from(&self, first: usize, count: usize) -> usize {
        let count = count.min(self.mapped.len().saturating_sub(first));
        if count == 0 {
            return 0;
        }
        let below_end = self.mapped_end.saturating_sub(first).min(count);
        self.mapped[first..first + below_end].iter().position(|&m| m != 0).unwrap_or(count)
    }

    /// The physical pages of the live series members, oldest member first, each once, leaving out those in
    /// `taken`: the physical pages of the members' pages (which have users: the members').
    fn member_pages(&mut self, taken: &[u32]) -> Vec<u32> {
        let Some(series) = self.series.as_ref() else { return Vec::new() };
        let epoch = self.phys.next_epoch();
        for &id in taken {
            self.phys.ids[id as usize].stamp = epoch;
        }
        let mut pages = Vec::new();
        for &(offset, range) in &series.members {
            let (first, last) = self.pages(offset, self.span(range));
            for page in first..=last {
                let Some(id) = self.mapped[page].checked_sub(1) else { continue };
                let physical = &mut self.phys.ids[id as usize];
                if physical.stamp != epoch && self.page_users[page] > 0 {
                    physical.stamp = epoch;
                    pages.push(id);
                }
            }
        }
        pages
    }

    /// Undoes the choice of `ids` for a mapping that did not happen: the first `own` were taken for the
    /// request (free ones go back to the free list, new ones are forgotten); the rest were only looked at,
    /// except new ones, which are forgotten.
    fn forget_ids(&mut self, ids: &[u32], own: usize) {
        for (index, &id) in ids.iter().enumerate() {
            if self.phys.ids[id as usize].mappings == 0 {
                self.phys.states.untake(id);
                self.phys.spare_ids.push(id);
            } else if index < own {
                self.phys.release(id);
            }
        }
    }

    /// Unmaps `[first, last]` (all mapped, no users) in one call; physical pages left mapped nowhere die.
    fn unmap_run(&mut self, vm: &V, first: usize, last: usize) {
        let offset = (first as u64) << self.page_shift;
        let size = ((last - first + 1) as u64) << self.page_shift;
        if let Some(reservation) = self.reservation.as_ref() {
            // SAFETY: (1) the run is whole mapped pages inside the reservation; no allocation uses them, and a
            // physical page this frees is used by none (a used one is mapped at its user's page).
            unsafe { vm.unmap_pages(reservation, offset, size) };
        }
        for page in first..=last {
            let id = self.mapped[page] - 1;
            self.mapped[page] = 0;
            let slot = id as usize;
            // Unlink `page` from the id's list of mappings.
            let next = self.next_alias[page];
            if self.phys.ids[slot].first_alias == page as u32 {
                self.phys.ids[slot].first_alias = next;
            } else {
                let mut at = self.phys.ids[slot].first_alias;
                while self.next_alias[at as usize] != page as u32 {
                    at = self.next_alias[at as usize];
                }
                self.next_alias[at as usize] = next;
            }
            self.phys.ids[slot].mappings -= 1;
            if self.phys.ids[slot].mappings == 0 {
                self.phys.alive -= 1;
                if !self.phys.states.in_use(id) {
                    self.phys.remove_free();
                }
                self.phys.states.untake(id);
                self.phys.spare_ids.push(id);
            }
        }
        self.rejoin(first, last + 1);
        if last + 1 == self.mapped_end {
            self.mapped_end = self.mapped[..first].iter().rposition(|&m| m != 0).map_or(0, |page| page + 1);
        }
        self.stats.decommits += 1;
        self.stats.mapped_bytes -= size;
        self.note(PageEvent::Decommit { offset, size }, &[]);
    }

    /// Unmaps every mapped page no allocation uses (one call per run), to make room for fresh pages when the
    /// address range is used up to its end. Returns whether anything was unmapped.
    fn unmap_unused(&mut self, vm: &V) -> bool {
        let runs = self.runs(|heap, page| heap.mapped[page] != 0 && heap.page_users[page] == 0);
        for &(first, last) in runs.iter().rev() {
            self.unmap_run(vm, first, last);
        }
        !runs.is_empty()
    }

    /// The runs `[first, last]` of pages below the mapped end for which `wanted` holds, lowest first.
    fn runs(&self, wanted: impl Fn(&Self, usize) -> bool) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        let mut page = 0;
        while page < self.mapped_end {
            if !wanted(self, page) {
                page += 1;
                continue;
            }
            let first = page;
            while page < self.mapped_end && wanted(self, page) {
                page += 1;
            }
            runs.push((first, page - 1));
        }
        runs
    }

    /// Whether mapped page `page` is of no use: no allocation uses it, and its physical page is either another
    /// address page's or free and mapped at a higher address too (so that unmapping it frees no memory).
    fn stale(&self, page: usize) -> bool {
        if self.page_users[page] != 0 {
            return false;
        }
        let Some(id) = self.mapped[page].checked_sub(1) else { return false };
        // Unused here, so a physical page in use is another address page's.
        if self.phys.states.in_use(id) {
            return true;
        }
        let mut alias = self.phys.ids[id as usize].first_alias;
        while alias != NIL {
            if alias as usize > page {
                return true;
            }
            alias = self.next_alias[alias as usize];
        }
        false
    }

    /// When the heap's mappings number more than [`MAPPINGS_PER_PAGE`] per physical page, unmaps runs of stale
    /// pages (see [`VirtualHeap::stale`]), longest first, until they number half that. Runs before a mapping, so
    /// that what that maps is not looked at. O(mapped pages), at most once per half the bound's mappings made
    /// (when too few are stale, it waits for that many more).
    fn unmap_stale(&mut self, vm: &V) {
        let pages = self.phys.alive.max(64);
        let mappings = self.stats.mapped_bytes >> self.page_shift;
        if mappings <= (MAPPINGS_PER_PAGE * pages).max(self.stale_check_at) {
            return;
        }
        let mut runs = self.runs(Self::stale);
        // Longest first (ties: the higher first).
        runs.sort_unstable_by_key(|&(first, last)| core::cmp::Reverse((last - first, first)));
        let mut left = mappings;
        for (first, last) in runs {
            if left <= MAPPINGS_PER_PAGE / 2 * pages {
                break;
            }
            self.unmap_run(vm, first, last);
            left -= (last - first + 1) as u64;
        }
        self.stale_check_at = left + MAPPINGS_PER_PAGE / 2 * pages;
    }

    /// Makes page `page` (mapped, ready) the user of its physical page.
    fn take_page(&mut self, page: usize) {
        self.phys.take(self.mapped[page] - 1);
    }

    /// The inverse of [`VirtualHeap::take_page`] for a page no allocation uses any more.
    fn leave_page(&mut self, page: usize) {
        if self.page_users[page] == 0 {
            self.phys.release(self.mapped[page] - 1);
        }
    }

    /// Frees an allocation; pages it leaves empty are given to the release policy.
    #[inline(always)]
    pub fn free(&mut self, vm: &V, handle: Handle, size: u64) -> Result<(), memcarve_core::Error> {
        // The range's pages (a series member's range is larger than its size).
        if self.small.as_ref().is_some_and(|small| small.carrier == handle.to_raw()) {
            // The small region's own range: never the caller's to free.
            return Err(memcarve_core::Error::ForeignHandle);
        }
        let range = self.ranges_of(&handle).free_range(handle)?;
        self.run_allocations = 0;
        let (first, last) = self.pages(range.offset, self.span(range.size));
        self.phys.leave_range(&self.mapped, &mut self.page_users, &self.joined, first, last);
        self.stats.live_bytes -= size;
        self.stats.allocations -= 1;
        let page_size = self.page_size();
        if let Some(series) = self.series.as_mut() {
            series.freed(range.offset, size, page_size);
        }
        self.release(vm);
        Ok(())
    }

    /// Gives back free physical pages beyond what the release policy keeps.
    fn release(&mut self, vm: &V) {
        if self.keeps_within_peak {
            // Committed bytes never exceed their peak, so the policy keeps every free page.
            return;
        }
        let keep = self.release.retained_bytes(&self.state());
        self.release_down_to(vm, keep);
    }

    /// Gives back free physical pages, in queue order, until at most `keep` bytes of them are left:
    /// each goes when every address page it is mapped at is unmapped (one call per run of such pages).
    fn release_down_to(&mut self, vm: &V, keep: u64) {
        let empty = self.empty_bytes();
        if empty <= keep {
            return;
        }
        let excess = (empty - keep).div_ceil(self.page_size());
        let mut pages = Vec::new();
        for id in self.phys.free_pages(excess as usize) {
            let mut alias = self.phys.ids[id as usize].first_alias;
            while alias != NIL {
                pages.push(alias as usize);
                alias = self.next_alias[alias as usize];
            }
        }
        pages.sort_unstable();
        let mut index = 0;
        while index < pages.len() {
            let first = pages[index];
            while index + 1 < pages.len() && pages[index + 1] == pages[index] + 1 {
                index += 1;
            }
            self.unmap_run(vm, first, pages[index]);
            index += 1;
        }
    }

    fn note(&mut self, event: PageEvent, ids: &[u32]) {
        if let Some(events) = self.events.as_mut() {
            let mut physical: Vec<(u32, u32)> = Vec::new();
            for &id in ids {
                match physical.last_mut() {
                    Some((first, count)) if *first + *count == id => *count += 1,
                    _ => physical.push((id, 1)),
                }
            }
            events.push(PageRecord { event, physical });
        }
        if self.observe {
            self.pending.push(event);
        }
    }

    /// Gives back every free physical page; returns the bytes given back.
    pub fn trim(&mut self, vm: &V) -> u64 {
        let before = self.phys.alive;
        // The small region's first page is let go when nothing on it is live.
        if let Some(small) = self.small.as_mut()
            && small.holds_first_page
            && self.page_users[0] == 1
        {
            small.holds_first_page = false;
            self.phys.leave_range(&self.mapped, &mut self.page_users, &self.joined, 0, 0);
        }
        self.release_down_to(vm, 0);
        (before - self.phys.alive) << self.page_shift
    }

    /// The host address of the heap's start (host memory only).
    pub fn host_address(&self, vm: &V) -> Option<core::ptr::NonNull<u8>> {
        self.reservation.as_ref().and_then(|reservation| vm.host_address(reservation))
    }

    /// Unmaps everything and releases the reservation (live allocations or not).
    pub fn destroy(&mut self, vm: &V) {
        for (first, last) in self.runs(|heap, page| heap.mapped[page] != 0) {
            if let Some(reservation) = self.reservation.as_ref() {
                // SAFETY: (1) the run is whole mapped pages inside the reservation; the heap is being destroyed
                // with its allocator, whose contract is that nothing uses its memory any more.
                unsafe {
                    vm.unmap_pages(
                        reservation,
                        (first as u64) << self.page_shift,
                        ((last - first + 1) as u64) << self.page_shift,
                    )
                };
            }
            self.mapped[first..=last].fill(0);
        }
        self.joined.words.fill(0);
        self.mapped_end = 0;
        self.phys = PhysicalPages::default();
        self.stats.mapped_bytes = 0;
        if let Some(reservation) = self.reservation.take() {
            // SAFETY: (1) the reservation came from `vm`, is released once (taken out of the Option), and every
            // mapped page was unmapped just above.
            unsafe { vm.release(reservation) };
        }
    }

    /// Checks the page bookkeeping against the ranges (O(n)); for tests.
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) -> Result<(), memcarve_core::Violation> {
        let fail = |what, page: usize| {
            Err(memcarve_core::Violation { what, offset: (page as u64) << self.page_shift })
        };
        self.ranges.check()?;
        if let Some(small) = &self.small {
            small.ranges.check()?;
            let carrier = self.ranges.get(&Handle::from_raw(small.carrier));
            if carrier.map(|info| (info.offset, info.size)) != Ok((0, small.ranges.capacity())) {
                return fail("the small region's range is not held at the start", 0);
            }
        }
        let mut users = vec![0u32; self.page_users.len()];
        for info in self.live_ranges() {
            let (first, last) = self.pages(info.offset, info.size);
            users[first..=last].iter_mut().for_each(|count| *count += 1);
        }
        if self.small.as_ref().is_some_and(|small| small.holds_first_page) {
            users[0] += 1;
        }
        let ids = self.phys.ids.len();
        let mut mappings = vec![0u32; ids];
        // Per id, the address pages with users showing it.
        let mut used_at = vec![0u32; ids];
        for (page, (&count, &mapped)) in self.page_users.iter().zip(&self.mapped).enumerate() {
            if count != users[page] {
                return fail("page user count disagrees with the allocations", page);
            }
            let Some(id) = mapped.checked_sub(1) else {
                if count > 0 {
                    return fail("a page with users is not mapped", page);
                }
                continue;
            };
            if id as usize >= ids {
                return fail("a page is mapped to an unknown physical page", page);
            }
            mappings[id as usize] += 1;
            if count > 0 {
                used_at[id as usize] += 1;
                if used_at[id as usize] > 1 || !self.phys.states.in_use(id) {
                    return fail("a used page's physical page is not its own: memory shared", page);
                }
            }
            if page >= self.mapped_end {
                return fail("a page above the mapped end is mapped", page);
            }
        }
        for page in 0..self.mapped.len() {
            if self.joined.contains(page as u32) != joins(&self.mapped, page) {
                return fail("a page's bit for a run of consecutive physical pages is wrong", page);
            }
        }
        if self.mapped_end > 0 && self.mapped[self.mapped_end - 1] == 0 {
            return fail("mapped end disagrees with the pages", self.mapped_end);
        }
        let mut alive = 0u64;
        for (id, (&count, page)) in mappings.iter().zip(&self.phys.ids).enumerate() {
            if count != page.mappings {
                return fail("a physical page's mapping count disagrees with the pages", id);
            }
            let mut listed = 0;
            let mut alias = page.first_alias;
            while alias != NIL && listed <= count {
                if self.mapped[alias as usize] != id as u32 + 1 {
                    return fail("a physical page lists a page not mapped to it", alias as usize);
                }
                listed += 1;
                alias = self.next_alias[alias as usize];
            }
            if listed != count {
                return fail("a physical page's list of mappings is incomplete", id);
            }
            let in_use = self.phys.states.in_use(id as u32);
            if count > 0 {
                alive += 1;
                if in_use && used_at[id] == 0 {
                    return fail("a physical page in use is used at none of its pages", id);
                }
            } else if in_use {
                return fail("a dead physical page is in use", id);
            }
        }
        let mut queued = vec![false; ids];
        for &id in self.phys.queued() {
            if queued[id as usize] || !self.phys.states.queued(id) {
                return fail("the free queue holds a page twice, or one not marked queued", id as usize);
            }
            queued[id as usize] = true;
        }
        let marked = (0..ids as u32).filter(|&id| self.phys.states.queued(id)).count();
        if marked != self.phys.queued().len() {
            return fail("a page marked queued is not in the free queue", 0);
        }
        if (0..ids).any(|id| self.phys.is_free(id as u32) && !queued[id]) {
            return fail("a free page is not queued", 0);
        }
        let free = self.phys.free_pages(ids).count() as u64;
        let free_alive =
            (0..ids).filter(|&id| mappings[id] > 0 && !self.phys.states.in_use(id as u32)).count() as u64;
        if free != free_alive || free != self.phys.free_count || alive != self.phys.alive {
            return fail("the free list or the alive count disagrees with the pages", 0);
        }
        let mapped = mappings.iter().map(|&count| u64::from(count)).sum::<u64>();
        if mapped << self.page_shift != self.stats.mapped_bytes {
            return fail("mapped bytes disagree with the pages", 0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{
        Bits, GrowthSeries, PeakSlack, PhysicalPages, ReleaseImmediately, ReleasePolicy, RetainEmpty,
        VirtualHeap, VirtualHeapConfig, claim, claim_pages, claim_runs, highest_unready,
        highest_unready_by_runs, joins, unready_alone,
    };
    use crate::backends::host::{
        FaultInjection, HostConfig, HostDevice, HostMode, MemoryProfile, RandomFailure, SplitMix64,
    };
    use crate::device::VirtualMemory;

    const PAGE: u64 = 2 << 20;

    /// A simulated discrete device, its first memory type with virtual memory, and that type's page size.
    fn simulated() -> (HostDevice, u32, u64) {
        let device = HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated));
        let memory_type = (0..8).find(|&t| device.granularity(t).is_some()).unwrap();
        let page = device.granularity(memory_type).unwrap();
        (device, memory_type, page)
    }

    /// A series that has seen enough replacements of `size` bytes growing by `step`.
    fn running(size: u64, step: u64) -> GrowthSeries {
        GrowthSeries { step, size, streak: GrowthSeries::MIN_STREAK, ..GrowthSeries::default() }
    }

    #[test]
    fn peak_slack_maps_its_spare_ahead_only_while_the_heap_is_young() {
        const MIB: u64 = 1 << 20;
        let policy = PeakSlack::default();
        let state = |peak_live_bytes: u64, allocated_bytes: u64| super::HeapState {
            committed_bytes: 100 * MIB,
            empty_bytes: 0,
            live_bytes: 100 * MIB,
            peak_committed_bytes: 100 * MIB,
            peak_live_bytes,
            page_size: PAGE,
            allocated_bytes,
            run_allocations: 0,
            allocations: 0,
            request_bytes: 0,
        };
        let slack_only = (100.0 * MIB as f64 * 1.04) as u64 - 100 * MIB;
        // Up to 8 times its peak live bytes allocated in all: the 16 MiB spare, more than the 4 % slack.
        assert_eq!(policy.commit_ahead_bytes(&state(100 * MIB, 800 * MIB)), 16 * MIB);
        // Past that, the slack alone.
        assert_eq!(policy.commit_ahead_bytes(&state(100 * MIB, 800 * MIB + 1)), slack_only);
        // A spare kept for good (the policy before the factor) still maps it, however much was allocated.
        let forever = PeakSlack { spare_until_allocated: f64::INFINITY, ..policy };
        assert_eq!(forever.commit_ahead_bytes(&state(100 * MIB, u64::MAX / 2)), 16 * MIB);
        // Before any peak, a heap is young, whatever the factor (an infinite one times nothing is not a number).
        let empty =
            super::HeapState { committed_bytes: 0, live_bytes: 0, peak_committed_bytes: 0, ..state(0, 0) };
        assert_eq!(policy.retained_bytes(&empty), 16 * MIB);
        assert_eq!(forever.retained_bytes(&empty), 16 * MIB);
        // Ended by count as well, when asked: young up to 5,000 allocations (the bytes permitting, as here).
        let counted = PeakSlack { spare_until_allocations: 5000, ..policy };
        let made = |allocations: u64| super::HeapState { allocations, ..state(100 * MIB, 100 * MIB) };
        assert_eq!(counted.commit_ahead_bytes(&made(5000)), 16 * MIB);
        assert_eq!(counted.commit_ahead_bytes(&made(5001)), slack_only);
        assert_eq!(policy.commit_ahead_bytes(&made(u64::MAX)), 16 * MIB, "the default counts no allocations");
    }

    #[test]
    fn peak_slack_maps_ahead_past_its_budget_only_in_a_run_of_allocations_that_raises_the_peak() {
        const MIB: u64 = 1 << 20;
        let policy = PeakSlack::default();
        // A young heap (twice its peak allocated) at its peak, past its budget (100 MiB + the 16 MiB spare): no
        // room in it.
        let state = |run_allocations: u64, request_bytes: u64, empty_bytes: u64| super::HeapState {
            committed_bytes: 120 * MIB,
            empty_bytes,
            live_bytes: 100 * MIB,
            peak_committed_bytes: 120 * MIB,
            peak_live_bytes: 100 * MIB,
            page_size: PAGE,
            allocated_bytes: 200 * MIB,
            run_allocations,
            allocations: 0,
            request_bytes,
        };
        assert_eq!(policy.commit_ahead_bytes(&state(0, 9 * MIB, 0)), 0, "not in a run");
        assert_eq!(policy.commit_ahead_bytes(&state(7, 9 * MIB, 0)), 0, "a run too short");
        // In a run of 8: as much as the request, rounded up to pages (9 MiB: 10), up to 10 MiB.
        assert_eq!(policy.commit_ahead_bytes(&state(8, 9 * MIB, 0)), 10 * MIB);
        assert_eq!(policy.commit_ahead_bytes(&state(8, 3 * MIB, 0)), 4 * MIB);
        assert_eq!(policy.commit_ahead_bytes(&state(80, 44 * MIB, 0)), 10 * MIB);
        // Empty pages, which a mapping maps ahead first, count.
        assert_eq!(policy.commit_ahead_bytes(&state(8, 9 * MIB, 6 * MIB)), 4 * MIB);
        assert_eq!(policy.commit_ahead_bytes(&state(8, 9 * MIB, 12 * MIB)), 0);
        // Below the peak (a heap returning to it) or outside a mapping (no request), nothing past the budget.
        let below = super::HeapState { live_bytes: 90 * MIB, ..state(8, 9 * MIB, 0) };
        assert_eq!(policy.commit_ahead_bytes(&below), 0);
        assert_eq!(policy.commit_ahead_bytes(&state(8, 0, 0)), 0);
        // Off: the budget alone.
        let off = PeakSlack { loading_ahead_bytes: 0, ..policy };
        assert_eq!(off.commit_ahead_bytes(&state(8, 9 * MIB, 0)), 0);
        // A heap that has allocated more than 8 times its peak takes such a run as an excursion: the budget alone.
        let old = super::HeapState { allocated_bytes: 800 * MIB + 1, ..state(8, 9 * MIB, 0) };
        assert_eq!(policy.commit_ahead_bytes(&old), 0);
        let young = super::HeapState { allocated_bytes: 800 * MIB, ..state(8, 9 * MIB, 0) };
        assert_eq!(policy.commit_ahead_bytes(&young), 10 * MIB);
    }

    #[test]
    fn peak_slack_maps_the_spare_ahead_only_for_requests_below_its_bound() {
        const MIB: u64 = 1 << 20;
        let policy = PeakSlack { loading_ahead_bytes: 0, ..PeakSlack::default() };
        // A young heap at its peak of 100 MiB with 102 MiB committed: the spare's budget is 116 MiB, the slack's 104.
        let state = |request_bytes: u64| super::HeapState {
            committed_bytes: 102 * MIB,
            empty_bytes: 0,
            live_bytes: 100 * MIB,
            peak_committed_bytes: 102 * MIB,
            peak_live_bytes: 100 * MIB,
            page_size: PAGE,
            allocated_bytes: 100 * MIB,
            run_allocations: 0,
            allocations: 0,
            request_bytes,
        };
        let slack_room = (100.0 * MIB as f64 * 1.04) as u64 - 102 * MIB;
        assert_eq!(policy.commit_ahead_bytes(&state(2 * MIB)), 14 * MIB, "a small request: the spare");
        assert_eq!(policy.commit_ahead_bytes(&state(8 * MIB - 1)), 14 * MIB);
        assert_eq!(policy.commit_ahead_bytes(&state(8 * MIB)), slack_room, "8 MiB or more: the slack only");
        assert_eq!(policy.commit_ahead_bytes(&state(40 * MIB)), slack_room);
        let before = PeakSlack { spare_ahead_below_bytes: u64::MAX, ..policy };
        assert_eq!(
            before.commit_ahead_bytes(&state(40 * MIB)),
            14 * MIB,
            "u64::MAX: the spare for every request"
        );
    }

    #[test]
    fn a_slowly_growing_series_is_rounded_to_many_steps() {
        // 96 KiB steps of 14 MiB caches: 16 steps are 1.5 MiB, a grid of 1 MiB (half a page).
        let (size, step) = (14 * (1 << 20) + 5000, 96 << 10);
        let range = running(size, step).range(size + step, PAGE).unwrap();
        assert_eq!(range % (1 << 20), 0);
        assert!(range >= size + step && range < size + step + (1 << 20));
        assert_eq!(running(size, step).range(size / 2, PAGE), None, "far from the series' size");
    }

    #[test]
    fn a_copy_freed_before_its_predecessor_is_not_listed_as_a_member() {
        // A running series: a copy a step larger replaces the last one, then is freed first, then the one before.
        let page = 2 << 20;
        let mut series = running(page, 4096);
        series.allocated(10 * page, page + 4096, page + 4096, page);
        series.freed(10 * page, page + 4096, page);
        series.freed(0, page, page);
        assert!(series.members.is_empty(), "{:?}", series.members);
        // Replaced in order, the copy is listed.
        series.allocated(20 * page, page + 8192, page + 8192, page);
        series.freed(30 * page, page + 4096, page);
        assert_eq!(series.members.iter().copied().collect::<Vec<_>>(), [(20 * page, page + 8192)]);
    }

    #[test]
    fn a_series_growing_fast_next_to_its_size_is_rounded_by_less_than_an_eighth() {
        // Caches of just over half a page growing 48 KiB a step: 16 steps would make a grid of half a page and
        // round a 1.1 MiB member up to 2 MiB.
        for size in [1100 << 10, 1200 << 10, 3 << 20, 600 << 10] {
            let request = size + (48 << 10);
            let range = running(size, 48 << 10).range(request, PAGE).unwrap();
            assert!(range >= request && range - request < request / 8, "{request} in {range}");
        }
    }

    #[test]
    fn a_physical_page_shown_twice_in_a_range_is_found_across_the_stamps_wrapping() {
        // Address pages 0 and 2 show free physical page `twice`, page 1 free physical page `once`.
        let mut phys = PhysicalPages::default();
        let (twice, once) = (phys.new_id(), phys.new_id());
        phys.ids[twice as usize].mappings = 2;
        phys.ids[once as usize].mappings = 1;
        let mapped = [twice + 1, once + 1, twice + 1];
        let users = [0; 3];
        // Two checks a round: 70,000 rounds pass the 16-bit stamps' wrap twice.
        for round in 0..70_000 {
            assert_eq!(highest_unready(&mapped, &users, &mut phys, 0, 2), Some(0), "round {round}");
            assert_eq!(highest_unready(&mapped, &users, &mut phys, 1, 2), None, "round {round}");
        }
        // A page stamped once and not looked at again until the epochs come round to the same number: the wrap
        // cleared its stamp, so it is not taken for a page shown twice.
        let lonely = phys.new_id();
        phys.ids[lonely as usize].mappings = 2;
        let alone = [lonely + 1];
        assert_eq!(highest_unready(&alone, &[0], &mut phys, 0, 0), None);
        for _ in 0..u16::MAX - 1 {
            phys.next_epoch();
        }
        assert_eq!(highest_unready(&alone, &[0], &mut phys, 0, 0), None);
    }

    /// Physical pages `0..count`, mapped once each and free.
    fn free_pages(count: u32) -> PhysicalPages {
        let mut phys = PhysicalPages::default();
        for id in 0..count {
            assert_eq!(phys.new_id(), id);
            phys.ids[id as usize].mappings = 1;
            phys.release(id);
        }
        phys
    }

    /// The [`joins`] bits of `mapped`.
    fn joined(mapped: &[u32]) -> Bits {
        let mut joined = Bits::default();
        joined.cover(mapped.len());
        (0..mapped.len()).for_each(|page| joined.set(page as u32, joins(mapped, page)));
        joined
    }

    fn in_use(phys: &PhysicalPages) -> Vec<bool> {
        (0..phys.ids.len() as u32).map(|id| phys.states.in_use(id)).collect()
    }

    #[test]
    fn a_claim_takes_a_ready_range_and_gives_back_all_it_took_where_a_page_is_not_ready() {
        // Address pages 0..4 show physical pages 1, 0, 2 and 0 again; page 0 has a user already (the allocation
        // next to the window), so physical page 1 is its own.
        let mut phys = free_pages(3);
        phys.ids[0].mappings = 2;
        phys.take(1);
        let mapped = [2, 1, 3, 1];
        let joined = joined(&mapped);
        let mut users = [1, 0, 0, 0];
        let (start, free) = (in_use(&phys), phys.free_count);
        // Physical page 0 shows at pages 1 and 3: met again at page 1, taken by page 3 by then.
        assert_eq!(claim(&mapped, &mut users, &joined, &mut phys, 0, 3), Err(1));
        assert_eq!(
            (in_use(&phys), phys.free_count, users),
            (start, free, [1, 0, 0, 0]),
            "nothing stays taken"
        );
        // Pages 0..=2 are ready: each gets a user, the free ones (2 and 0) are put in use and leave the free count.
        assert_eq!(claim(&mapped, &mut users, &joined, &mut phys, 0, 2), Ok(()));
        assert_eq!(users, [2, 1, 1, 0]);
        assert_eq!((in_use(&phys), phys.free_count), (vec![true, true, true], free - 2));
        // Page 3 now shows a physical page page 1 uses.
        assert_eq!(claim(&mapped, &mut users, &joined, &mut phys, 3, 3), Err(3));
        // Unmapped pages are not ready either.
        assert_eq!(claim(&[0], &mut [0], &Bits::default(), &mut phys, 0, 0), Err(0));
    }

    #[test]
    fn a_claim_checks_runs_of_consecutive_physical_pages_and_gives_back_the_runs_above_the_failing_one() {
        // Pages 0..5 show physical pages 5..10, pages 5..10 show 0..5: two runs. Physical page 7 is in use.
        let mut phys = free_pages(10);
        phys.take(7);
        let mapped: Vec<u32> = (5..10).chain(0..5).map(|id| id + 1).collect();
        let joined = joined(&mapped);
        let mut users = [0; 10];
        let free = phys.free_count;
        // The top run is taken, then page 2 (physical page 7) fails, and the top run is given back.
        assert_eq!(claim(&mapped, &mut users, &joined, &mut phys, 0, 9), Err(2));
        assert_eq!(
            (in_use(&phys), phys.free_count, users),
            ((0..10).map(|id| id == 7).collect(), free, [0; 10])
        );
        // Above page 2 every page is ready, across the two runs.
        assert_eq!(claim(&mapped, &mut users, &joined, &mut phys, 3, 9), Ok(()));
        assert_eq!(users, [0, 0, 0, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(in_use(&phys), [true, true, true, true, true, false, false, true, true, true]);
        assert_eq!(phys.free_count, free - 7);
        // Freed, they go back to the queue in page order, behind the pages queued before.
        phys.leave_range(&mapped, &mut users, &joined, 3, 9);
        assert_eq!((phys.free_count, users), (free, [0; 10]));
        assert_eq!(phys.free_pages(10).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5, 6, 8, 9]);
    }

    #[test]
    fn claims_and_frees_by_runs_do_what_they_do_a_page_at_a_time() {
        // Random windows over pages showing runs of physical pages (some shown twice, some pages unmapped), some
        // physical pages in use elsewhere and users on the windows' edges: searched for the highest page not
        // ready under a budget, by runs and a page at a time, the answer and the budget left must be the same;
        // claimed both ways, the outcome and the books must be the same; so must they after the allocation
        // claimed is freed (the free queue's order included).
        let mut rng = SplitMix64(11);
        let mut next = move |bound: u64| rng.next_u64() % bound;
        let (mut claimed, mut failed) = (0, 0);
        for round in 0..3000 {
            let pages = 4 + next(60) as usize;
            let ids = pages as u32 + next(pages as u64) as u32;
            let mut mapped = Vec::new();
            while mapped.len() < pages {
                let (start, len) = (next(u64::from(ids)) as u32, 1 + next(12) as u32);
                if next(8) == 0 {
                    mapped.extend(std::iter::repeat_n(0, len as usize));
                } else {
                    mapped.extend((start..(start + len).min(ids)).map(|id| id + 1));
                }
            }
            mapped.truncate(pages);
            let joined = joined(&mapped);
            let mut phys = free_pages(ids);
            for _ in 0..next(u64::from(ids) / 2) {
                phys.take(next(u64::from(ids)) as u32);
            }
            let first = next(pages as u64) as usize;
            let last = first + next((pages - first) as u64) as usize;
            let mut users = vec![0; pages];
            for edge in [first, last] {
                if mapped[edge] != 0 && !phys.states.in_use(mapped[edge] - 1) && next(3) == 0 {
                    phys.take(mapped[edge] - 1);
                    users[edge] = 1;
                }
            }
            let books = |phys: &PhysicalPages, users: &[u32]| {
                let queue = phys.queued().to_vec();
                (phys.states.states.clone(), queue, phys.free_count, users.to_vec())
            };
            // The search's look for the highest page not ready (leaving aside pages shown twice), under a budget.
            let budget = next(2 * pages as u64) as usize;
            let (mut left, mut runs_left) = (budget, budget);
            let mut looked_at = || {
                for page in (first..=last).rev() {
                    left = left.checked_sub(1).ok_or(())?;
                    if unready_alone(&mapped, &users, &phys, page) {
                        return Ok(Some(page));
                    }
                }
                Ok(None)
            };
            let found = looked_at();
            let runs_found =
                highest_unready_by_runs(&mapped, &users, &joined, &phys, first, last, &mut runs_left);
            assert_eq!((found, left), (runs_found, runs_left), "round {round}: {mapped:?} [{first}, {last}]");
            let (mut by_pages, mut by_runs) = ((phys.clone(), users.clone()), (phys, users));
            let outcome = claim_pages(&mapped, &mut by_pages.1, &mut by_pages.0, first, last);
            let runs_outcome = claim_runs(&mapped, &mut by_runs.1, &joined, &mut by_runs.0, first, last);
            assert_eq!(outcome, runs_outcome, "round {round}: {mapped:?} [{first}, {last}]");
            assert_eq!(books(&by_pages.0, &by_pages.1), books(&by_runs.0, &by_runs.1), "round {round}");
            if outcome.is_err() {
                failed += 1;
                continue;
            }
            claimed += 1;
            by_pages.0.leave_pages(&mapped, &mut by_pages.1, first, last);
            by_runs.0.leave_runs(&mapped, &mut by_runs.1, &joined, first, last);
            assert_eq!(
                books(&by_pages.0, &by_pages.1),
                books(&by_runs.0, &by_runs.1),
                "round {round}: freed"
            );
        }
        assert!(claimed > 300 && failed > 300, "both outcomes are tried: {claimed} claimed, {failed} failed");
    }

    #[test]
    fn a_mapping_that_fails_after_another_gives_back_every_page_it_took() {
        // Pages 0 and 2 unmapped, page 1 mapped to a free physical page: making pages 0..=2 ready maps two runs,
        // and the second mapping fails. The first run's new physical page must not stay taken by nobody.
        let (device, memory_type, page) = simulated();
        let keep_all = RetainEmpty { bytes: 64 * page, live_fraction: 0.0 };
        // Nothing apart: the heap's ranges start at 0.
        let config = VirtualHeapConfig::default()
            .with_release(Arc::new(keep_all))
            .with_growing_series(false)
            .with_small_below(0);
        let mut heap = VirtualHeap::new(&device, memory_type, 64 * page, page, &config).unwrap();
        let placed = heap.allocate(&device, 3 * page, 1, true).unwrap().unwrap();
        assert_eq!((placed.offset, heap.mapped_end), (0, 3), "three pages mapped, none ahead");
        heap.free(&device, placed.handle, 3 * page).unwrap();
        heap.unmap_run(&device, 2, 2);
        heap.unmap_run(&device, 0, 0);
        heap.check().unwrap();
        let commits = device.counters().commit_attempts;
        device.set_faults(FaultInjection { fail_commit_at: Some(commits + 2), ..FaultInjection::default() });
        assert!(heap.make_ready(&device, 0, 2, 3 * page, Some(false)).is_err());
        assert_eq!(
            device.counters().commit_attempts,
            commits + 2,
            "the first run was mapped, the second refused"
        );
        heap.check().unwrap();
        assert_eq!(heap.page_users[..3], [0, 0, 0]);
        // Everything mapped is free: the retained pages can all be given back.
        assert_eq!(heap.stats().committed_bytes, heap.stats().empty_bytes);
        heap.destroy(&device);
    }

    #[test]
    fn a_heap_counts_for_its_release_policy_every_allocation_it_made() {
        let (device, memory_type, page) = simulated();
        let config = VirtualHeapConfig::default().with_growing_series(false);
        let mut heap = VirtualHeap::new(&device, memory_type, 64 * page, page, &config).unwrap();
        let first = heap.allocate(&device, page, 1, true).unwrap().unwrap();
        let small = heap.allocate(&device, 100, 1, true).unwrap().unwrap();
        heap.free(&device, first.handle, page).unwrap();
        let again = heap.allocate(&device, page, 1, true).unwrap().unwrap();
        assert_eq!(heap.state().allocations, 3, "freed ones included, the small region's too");
        // A request refused (it needs a mapping, and none may be made) is not counted.
        assert!(heap.allocate(&device, 40 * page, 1, false).unwrap().is_none());
        assert_eq!(heap.state().allocations, 3);
        // As a tier, the other tiers' count too.
        heap.set_outside(super::Outside { allocations: 5, ..super::Outside::default() });
        assert_eq!(heap.state().allocations, 8);
        heap.free(&device, small.handle, 100).unwrap();
        heap.free(&device, again.handle, page).unwrap();
        heap.destroy(&device);
    }

    #[test]
    fn random_operations_on_small_heaps_under_failures_keep_the_page_books_right() {
        // Heaps of 12 to 51 pages under four release policies, with and without growing series, a share of the
        // mappings failing (none to 30 %), requests from a few bytes to a quarter of the heap at alignments up to
        // 2 MiB, some that may not commit, and trims: fresh addresses run out often, so unused mappings are
        // dropped and placements fall back to TLSF's good fit. The page checker runs after every operation, and
        // at the end every page must come back.
        let mut rng = SplitMix64(7);
        let mut next = move || rng.next_u64();
        for round in 0..400u64 {
            let (device, memory_type, page) = simulated();
            let release: Arc<dyn ReleasePolicy> = match round % 4 {
                0 => Arc::new(PeakSlack {
                    slack: 0.0,
                    max_ahead_fraction: 0.5,
                    min_spare_bytes: 0,
                    spare_until_allocated: f64::INFINITY,
                    ..PeakSlack::default()
                }),
                // The spare ended by count partway through the round (600 operations).
                3 if round % 8 == 7 => {
                    Arc::new(PeakSlack { spare_until_allocations: 150, ..PeakSlack::default() })
                }
                1 => Arc::new(RetainEmpty { bytes: 4 * page, live_fraction: 0.0 }),
                2 => Arc::new(ReleaseImmediately),
                _ => Arc::new(PeakSlack::default()),
            };
            let config =
                VirtualHeapConfig::default().with_release(release).with_growing_series(round % 8 < 4);
            let pages = 12 + round % 40;
            let mut heap = VirtualHeap::new(&device, memory_type, pages * page, page, &config).unwrap();
            device.set_faults(FaultInjection {
                random_failure: Some(RandomFailure::new(0.05 * (round % 7) as f64, round)),
                ..FaultInjection::default()
            });
            let (mut live, mut live_bytes) = (Vec::new(), 0);
            for step in 0..600 {
                let roll = next() % 100;
                if live.is_empty() || roll < 55 {
                    let size = 1 + match next() % 4 {
                        0 => next() % 4096,
                        1 => next() % page,
                        2 => next() % (3 * page),
                        _ => next() % (pages * page / 4),
                    };
                    let alignment = 1 << (next() % 22);
                    if live_bytes + size <= pages * page / 2
                        && let Ok(Some(placed)) =
                            heap.allocate(&device, size, alignment, !next().is_multiple_of(16))
                    {
                        live.push((placed.handle, size));
                        live_bytes += size;
                    }
                } else if roll < 97 {
                    let (handle, size) = live.swap_remove((next() % live.len() as u64) as usize);
                    heap.free(&device, handle, size).unwrap();
                    live_bytes -= size;
                } else {
                    heap.trim(&device);
                }
                heap.check().unwrap_or_else(|v| panic!("round {round} step {step}: {v:?}"));
            }
            for (handle, size) in live {
                heap.free(&device, handle, size).unwrap();
            }
            heap.trim(&device);
            heap.check().unwrap();
            assert_eq!(
                (heap.stats().committed_bytes, device.counters().committed_bytes),
                (0, 0),
                "round {round}: every page came back"
            );
            heap.destroy(&device);
        }
    }

    #[test]
    fn small_requests_go_apart_while_the_region_has_room_and_pages_to_take() {
        let (device, memory_type, page) = simulated();
        let config = VirtualHeapConfig::default();
        // 64 pages: the region is the first 16 (a quarter of the reservation).
        let mut heap = VirtualHeap::new(&device, memory_type, 64 * page, page, &config).unwrap();
        let region = 16 * page;
        let alloc = |heap: &mut VirtualHeap<HostDevice>, size, may_commit| {
            heap.allocate(&device, size, 1, may_commit).unwrap().unwrap()
        };
        let large = alloc(&mut heap, 3 * page / 2, true);
        assert!(large.offset >= region, "a large request goes above the region: {:#x}", large.offset);
        let mapped = device.counters().commits;
        // No commits allowed: the region's page is not mapped yet, so the counter goes on the large request's
        // pages instead, which are ready.
        let counter = alloc(&mut heap, 8, false);
        assert!(counter.offset >= region);
        assert_eq!(device.counters().commits, mapped);
        // Allowed: one mapping of the region's first page, nothing ahead of it.
        let bias = alloc(&mut heap, 4096, true);
        assert!(bias.offset < region);
        assert_eq!(device.counters().commits, mapped + 1);
        assert_eq!(heap.mapped[1], 0, "nothing mapped ahead in the region");
        let at_bound = alloc(&mut heap, config.small_below_bytes, true);
        assert!(at_bound.offset >= region, "the bound itself is not small");
        heap.check().unwrap();
        let mut leaks = Vec::new();
        heap.leaks(memory_type, &mut leaks);
        assert_eq!(leaks.len(), 4, "the region's own range is no allocation");
        // The region's range is never the caller's to free.
        let carrier = heap.small.as_ref().unwrap().carrier;
        let refused = heap.free(&device, memcarve_core::Handle::from_raw(carrier), region);
        assert_eq!(refused, Err(memcarve_core::Error::ForeignHandle));
        heap.check().unwrap();
        // A full region sends small requests to the main ranges.
        let mut kept = Vec::new();
        loop {
            let placed = alloc(&mut heap, 60 << 10, true);
            let apart = placed.offset < region;
            kept.push(placed);
            if !apart {
                break;
            }
        }
        assert!(kept.len() > 200, "{} requests of 60 KiB fill 32 MiB less one", kept.len());
        heap.check().unwrap();
        for placed in kept {
            heap.free(&device, placed.handle, 60 << 10).unwrap();
        }
        for (placed, size) in [(large, 3 * page / 2), (counter, 8), (bias, 4096), (at_bound, 64 << 10)] {
            heap.free(&device, placed.handle, size).unwrap();
        }
        heap.check().unwrap();
        heap.trim(&device);
        assert_eq!((heap.stats().committed_bytes, device.counters().committed_bytes), (0, 0));
        heap.destroy(&device);
    }

    #[test]
    fn the_small_regions_first_page_stays_mapped_until_the_heap_is_trimmed() {
        let (device, memory_type, page) = simulated();
        let mut heap =
            VirtualHeap::new(&device, memory_type, 64 * page, page, &VirtualHeapConfig::default()).unwrap();
        // A large request whose pages ahead are free pages a small request could be given.
        let large = heap.allocate(&device, 3 * page, 1, true).unwrap().unwrap();
        let counter = heap.allocate(&device, 8, 1, true).unwrap().unwrap();
        assert_eq!(counter.offset, 0);
        heap.free(&device, counter.handle, 8).unwrap();
        heap.check().unwrap();
        // Nothing on it is live, yet its page is no free page: a large request mapping free pages elsewhere cannot
        // take it, and the next small request finds it ready.
        assert_eq!(heap.page_users[0], 1);
        let large_too = heap.allocate(&device, 4 * page, 1, true).unwrap().unwrap();
        let again = heap.allocate(&device, 8, 1, true).unwrap().unwrap();
        assert_eq!(again.offset, 0);
        assert_eq!(device.counters().decommits, 0, "the region's page was never unmapped");
        heap.check().unwrap();
        for (placed, size) in [(again, 8), (large, 3 * page), (large_too, 4 * page)] {
            heap.free(&device, placed.handle, size).unwrap();
        }
        // Trimmed, it goes with the others.
        heap.trim(&device);
        heap.check().unwrap();
        assert_eq!((heap.stats().committed_bytes, device.counters().committed_bytes), (0, 0));
        assert_eq!(heap.page_users[0], 0);
        heap.destroy(&device);
    }

    #[test]
    fn pages_taken_for_a_position_the_ranges_refuse_go_back() {
        // A series cursor between two 512-byte granules, on ready pages: the placement takes the pages there, TLSF
        // refuses the position (not a multiple of its granularity), and the pages must come back as they were.
        let (device, memory_type, page) = simulated();
        let config = VirtualHeapConfig::default().with_small_below(0);
        let mut heap = VirtualHeap::new(&device, memory_type, 64 * page, page, &config).unwrap();
        let placed = heap.allocate(&device, 4 * page, 1, true).unwrap().unwrap();
        heap.free(&device, placed.handle, 4 * page).unwrap();
        let before = (heap.stats(), heap.phys.free_count, heap.page_users.clone());
        heap.series.as_mut().unwrap().cursor = Some(page + 256);
        assert!(heap.place_at_cursor(page, 1).is_none(), "TLSF takes no position off its granularity");
        assert_eq!((heap.stats(), heap.phys.free_count, heap.page_users.clone()), before);
        heap.check().unwrap();
        // On the granularity the same pages are taken.
        heap.series.as_mut().unwrap().cursor = Some(page + 512);
        let taken = heap.place_at_cursor(page, 1).unwrap();
        assert_eq!(taken.offset, page + 512);
        assert_eq!(heap.page_users[1..3], [1, 1]);
        heap.destroy(&device);
    }
}
