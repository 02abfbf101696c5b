//! Deferred frees: an allocation (and the buffer or image bound to it) handed back to memcarve with a wait
//! point (a fence, or a timeline-semaphore value), freed once the device has passed that point. The queue is
//! checked on every resource call of the allocator and by [`Allocator::process_deferred`], so callers never
//! poll. Invariant: an entry leaves the queue only after its wait point was seen reached and while no
//! [`Allocator::wait_deferred`] is passing its handle to the driver (or when the device drops, with the
//! allocator's memory already gone).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use ash::vk;

use super::device::{VulkanDevice, device_error, lock, version_at_least};
use crate::allocator::{Allocation, Allocator};
use crate::device::DeviceError;
use crate::error::{Error, Result};

/// When the device is done with a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitPoint {
    /// When this fence signals.
    Fence(vk::Fence),
    /// When this timeline semaphore reaches `value` (needs [`super::VulkanFeatures::timeline_semaphore`]).
    Timeline {
        /// A semaphore created with `VK_SEMAPHORE_TYPE_TIMELINE`.
        semaphore: vk::Semaphore,
        /// The value to wait for.
        value: u64,
    },
}

/// The object a deferred free destroys along with its allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeferredResource {
    /// Memory only (the caller destroys its own objects).
    Memory,
    /// A buffer, destroyed before its memory is freed.
    Buffer(vk::Buffer),
    /// An image, destroyed before its memory is freed.
    Image(vk::Image),
}

/// A deferred free the device refused (a timeline wait without timeline semaphores, a null handle). Nothing
/// was freed or destroyed: the allocation and the resource are handed back.
#[derive(Debug)]
pub struct DeferRejected {
    /// Why it was refused.
    pub error: Error,
    /// The allocation, still live.
    pub allocation: Allocation,
    /// The resource, not destroyed.
    pub resource: DeferredResource,
}

impl core::fmt::Display for DeferRejected {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "deferred free refused: {}", self.error)
    }
}

impl std::error::Error for DeferRejected {}

#[derive(Debug)]
struct PendingFree {
    allocation: Allocation,
    resource: DeferredResource,
    wait: WaitPoint,
    /// Names the entry for the waits that pin it.
    id: u64,
    /// Calls of `wait_deferred` passing this entry's fence or semaphore to the driver outside the lock: while
    /// any does, the entry stays queued (so its owner does not destroy the handle under the wait).
    pins: u32,
}

/// The queue of pending frees of one device.
#[derive(Debug, Default)]
pub(super) struct DeferredQueue {
    pending: Mutex<Vec<PendingFree>>,
    /// `pending.len()`, readable without the lock so that resource calls skip an empty queue for free.
    count: AtomicUsize,
    /// The next entry's id.
    next_id: AtomicU64,
}

impl DeferredQueue {
    /// Destroys the objects of every pending entry without waiting (see `VulkanDevice`'s `Drop`).
    pub(super) fn destroy_remaining(&mut self, device: &ash::Device) {
        let pending = core::mem::take(self.pending.get_mut().unwrap_or_else(|e| e.into_inner()));
        for entry in pending {
            // SAFETY: the caller of `free_after` promised the object was created on this device, is used by
            // nothing once its wait point is reached, and that its allocator (whose blocks are freed by now) is
            // dropped only once the device no longer uses it.
            unsafe { destroy_resource(device, entry.resource) };
            // The allocation's memory went with the allocator's blocks.
            let _ = entry.allocation.into_raw();
        }
        self.count.store(0, Ordering::Relaxed);
    }
}

/// The entries one `wait_deferred` pinned; unpinned when dropped (an early return or a panic included).
struct Pins<'a> {
    queue: &'a DeferredQueue,
    ids: Vec<u64>,
}

impl Drop for Pins<'_> {
    fn drop(&mut self) {
        if self.ids.is_empty() {
            return;
        }
        let mut pending = lock(&self.queue.pending);
        // Pinned entries never left the queue; ids are in the order they were pinned, not the queue's.
        self.ids.sort_unstable();
        for entry in pending.iter_mut() {
            if self.ids.binary_search(&entry.id).is_ok() {
                entry.pins -= 1;
            }
        }
    }
}

/// # Safety
///
/// 1. The object is a valid object of `device`, not in use, and destroyed once.
unsafe fn destroy_resource(device: &ash::Device, resource: DeferredResource) {
    match resource {
        DeferredResource::Memory => {}
        // SAFETY: (1) by the caller.
        DeferredResource::Buffer(buffer) => unsafe { device.destroy_buffer(buffer, None) },
        // SAFETY: (1) by the caller.
        DeferredResource::Image(image) => unsafe { device.destroy_image(image, None) },
    }
}

impl Allocator<VulkanDevice> {
    /// Frees `allocation` once the device has passed `wait`, without the caller polling: pending frees are
    /// checked on every resource call of this allocator (create, destroy, allocate) and by
    /// [`Allocator::process_deferred`].
    ///
    /// # Safety
    ///
    /// 1. Once `wait` is reached, the device no longer uses the allocation's memory.
    /// 2. The fence or semaphore stays valid (not destroyed, and a fence not reset) until the free was
    ///    processed ([`Allocator::pending_deferred_frees`] no longer counts it).
    /// 3. The allocator is dropped only once the device no longer uses the memory: dropping it frees every
    ///    block at once, pending frees or not, so call [`Allocator::wait_deferred`] (or wait for the device to
    ///    be idle) before dropping it.
    pub unsafe fn free_after(&self, allocation: Allocation, wait: WaitPoint) -> Result<(), DeferRejected> {
        // SAFETY: the caller upholds (1) to (3); `Memory` carries no object.
        unsafe { self.defer(allocation, DeferredResource::Memory, wait) }
    }

    /// Destroys `buffer` and frees its allocation once the device has passed `wait`.
    ///
    /// # Safety
    ///
    /// 1. `buffer` was created with `allocation` by [`Allocator::create_buffer_with_options`] (or `create_buffer`)
    ///    of this allocator and is destroyed by nothing else.
    /// 2. Once `wait` is reached, the device no longer uses the buffer or its memory.
    /// 3. The fence or semaphore stays valid (and a fence not reset) until the free was processed.
    /// 4. The allocator is dropped only once the device no longer uses the buffer or its memory (see
    ///    [`Allocator::free_after`]).
    pub unsafe fn destroy_buffer_after(
        &self,
        buffer: vk::Buffer,
        allocation: Allocation,
        wait: WaitPoint,
    ) -> Result<(), DeferRejected> {
        // SAFETY: the caller upholds (1) to (4).
        unsafe { self.defer(allocation, DeferredResource::Buffer(buffer), wait) }
    }

    /// Destroys `image` and frees its allocation once the device has passed `wait`.
    ///
    /// # Safety
    ///
    /// As for [`Allocator::destroy_buffer_after`], for an image made by `create_image`.
    pub unsafe fn destroy_image_after(
        &self,
        image: vk::Image,
        allocation: Allocation,
        wait: WaitPoint,
    ) -> Result<(), DeferRejected> {
        // SAFETY: the caller upholds the conditions of `destroy_buffer_after`, for the image.
        unsafe { self.defer(allocation, DeferredResource::Image(image), wait) }
    }

    /// # Safety
    ///
    /// As for [`Allocator::destroy_buffer_after`].
    unsafe fn defer(
        &self,
        allocation: Allocation,
        resource: DeferredResource,
        wait: WaitPoint,
    ) -> Result<(), DeferRejected> {
        let device = self.device();
        let refused = match wait {
            WaitPoint::Fence(fence) if fence == vk::Fence::null() => Some("a null fence never signals"),
            WaitPoint::Timeline { semaphore, .. } if semaphore == vk::Semaphore::null() => {
                Some("a null semaphore never signals")
            }
            WaitPoint::Timeline { .. }
                if !device.features().timeline_semaphore || !version_at_least(device.api_version(), 1, 2) =>
            {
                Some("timeline waits need the timelineSemaphore feature and Vulkan 1.2")
            }
            _ => None,
        };
        if let Some(reason) = refused {
            return Err(DeferRejected {
                error: Error::Device(DeviceError::Unsupported(reason)),
                allocation,
                resource,
            });
        }
        let queue = &device.deferred;
        let mut pending = lock(&queue.pending);
        let id = queue.next_id.fetch_add(1, Ordering::Relaxed);
        pending.push(PendingFree { allocation, resource, wait, id, pins: 0 });
        queue.count.store(pending.len(), Ordering::Relaxed);
        Ok(())
    }

    /// Deferred frees not processed yet.
    pub fn pending_deferred_frees(&self) -> usize {
        self.device().deferred.count.load(Ordering::Relaxed)
    }

    /// Frees every deferred allocation whose wait point has been reached (destroying its buffer or image
    /// first); returns how many. A failed status query (device lost) keeps the entry and is returned as the
    /// error after the other entries were processed. An entry that a [`Allocator::wait_deferred`] running on
    /// another thread is waiting on stays queued until that wait returns, reached or not.
    pub fn process_deferred(&self) -> Result<usize> {
        let device = self.device();
        let queue = &device.deferred;
        if queue.count.load(Ordering::Relaxed) == 0 {
            return Ok(0);
        }
        let mut first_error = None;
        let ready: Vec<PendingFree> = {
            let mut pending = lock(&queue.pending);
            let mut ready = Vec::new();
            let mut index = 0;
            while index < pending.len() {
                if pending[index].pins > 0 {
                    // A `wait_deferred` is passing its handle to the driver: it stays until that is over.
                    index += 1;
                    continue;
                }
                match reached(device, pending[index].wait) {
                    Ok(true) => ready.push(pending.swap_remove(index)),
                    Ok(false) => index += 1,
                    Err(error) => {
                        first_error.get_or_insert(error);
                        index += 1;
                    }
                }
            }
            queue.count.store(pending.len(), Ordering::Relaxed);
            ready
        };
        let freed = ready.len();
        for entry in ready {
            // SAFETY: the caller of `destroy_*_after` promised that the object is this allocator's, destroyed by
            // nothing else, and unused once the wait point is reached, which `reached` just observed.
            unsafe { destroy_resource(device.device(), entry.resource) };
            if let Err(error) = self.free(entry.allocation) {
                first_error.get_or_insert(error);
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(freed),
        }
    }

    /// Waits up to `timeout_ns` for every pending wait point, then processes the queue; returns how many
    /// frees were processed, or the wait's error (a timeout) once the queue was processed all the same. For
    /// teardown: call it (or wait for the device to be idle and call [`Allocator::process_deferred`]) before
    /// dropping the allocator. The entries queued when it starts stay queued until its waits return, even
    /// those whose wait point is reached meanwhile (it passes their fences and semaphores to the driver, so
    /// their owners must not destroy them yet); entries queued later are processed as usual.
    pub fn wait_deferred(&self, timeout_ns: u64) -> Result<usize> {
        let queue = &self.device().deferred;
        let (mut fences, mut timelines): (Vec<vk::Fence>, Vec<(vk::Semaphore, u64)>) =
            (Vec::new(), Vec::new());
        let pinned = {
            let mut pending = lock(&queue.pending);
            let mut pinned = Vec::with_capacity(pending.len());
            for entry in pending.iter_mut() {
                // Pinned under the lock, with the copy: the entry stays until the waits below are over.
                entry.pins += 1;
                pinned.push(entry.id);
                match entry.wait {
                    WaitPoint::Fence(fence) => fences.push(fence),
                    WaitPoint::Timeline { semaphore, value } => timelines.push((semaphore, value)),
                }
            }
            Pins { queue, ids: pinned }
        };
        let waited = self.wait_for(fences, timelines, timeout_ns);
        drop(pinned);
        let processed = self.process_deferred();
        waited.and(processed)
    }

    /// The waits of [`Allocator::wait_deferred`], on handles copied from the queue while it holds them there.
    fn wait_for(
        &self,
        mut fences: Vec<vk::Fence>,
        mut timelines: Vec<(vk::Semaphore, u64)>,
        timeout_ns: u64,
    ) -> Result<()> {
        let device = self.device();
        // One wait per fence, and per semaphore for its highest value.
        fences.sort_unstable();
        fences.dedup();
        timelines.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        timelines.dedup_by_key(|(semaphore, _)| *semaphore);
        let timed_out = |call: &str| Error::Device(DeviceError::Other(format!("{call} timed out")));
        if !fences.is_empty() {
            // SAFETY: the fences are valid until their frees are processed (`destroy_*_after`'s condition),
            // and their entries are still queued: `process_deferred` leaves pinned entries where they are.
            match unsafe { device.device().wait_for_fences(&fences, true, timeout_ns) } {
                Ok(()) => {}
                Err(vk::Result::TIMEOUT) => return Err(timed_out("vkWaitForFences")),
                Err(result) => return Err(Error::Device(device_error(result, "vkWaitForFences"))),
            }
        }
        if !timelines.is_empty() {
            let (semaphores, values): (Vec<vk::Semaphore>, Vec<u64>) = timelines.into_iter().unzip();
            let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
            // SAFETY: as for the fences; timeline entries exist only when timeline semaphores and Vulkan 1.2
            // are enabled (checked in `defer`), so vkWaitSemaphores is loaded.
            match unsafe { device.device().wait_semaphores(&info, timeout_ns) } {
                Ok(()) => {}
                Err(vk::Result::TIMEOUT) => return Err(timed_out("vkWaitSemaphores")),
                Err(result) => return Err(Error::Device(device_error(result, "vkWaitSemaphores"))),
            }
        }
        Ok(())
    }

    /// Processes the queue on resource calls, when anything is pending. Its errors (a lost device) surface on
    /// the next explicit [`Allocator::process_deferred`]; the resource call itself goes on.
    pub(super) fn process_deferred_quietly(&self) {
        if self.pending_deferred_frees() > 0 {
            let _ = self.process_deferred();
        }
    }
}

/// Whether the device has passed `wait`.
fn reached(device: &VulkanDevice, wait: WaitPoint) -> Result<bool> {
    match wait {
        // SAFETY: the fence is valid while its free is queued (`destroy_*_after`'s condition); vkGetFenceStatus
        // needs no external synchronisation.
        WaitPoint::Fence(fence) => unsafe { device.device().get_fence_status(fence) }
            .map_err(|result| Error::Device(device_error(result, "vkGetFenceStatus"))),
        WaitPoint::Timeline { semaphore, value } => {
            // SAFETY: the semaphore is a valid timeline semaphore while queued (the caller's condition), and
            // Vulkan 1.2 with timeline semaphores was checked when it was queued.
            unsafe { device.device().get_semaphore_counter_value(semaphore) }
                .map(|counter| counter >= value)
                .map_err(|result| Error::Device(device_error(result, "vkGetSemaphoreCounterValue")))
        }
    }
}
