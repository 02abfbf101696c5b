//! The upload ring: FIFO slices of one mapped block, wraparound, and out-of-order retire refused.

use std::collections::VecDeque;
use std::sync::Arc;

use memcarve::backends::host::{HostConfig, HostDevice, HostMode, MemoryProfile};
use memcarve::{Allocator, AllocatorConfig, Error, UploadRing};

use crate::rng::Rng;

fn real(profile: MemoryProfile) -> (Arc<HostDevice>, Allocator<Arc<HostDevice>>) {
    let device = Arc::new(HostDevice::new(HostConfig::new(profile, HostMode::Real)));
    let allocator = Allocator::new(Arc::clone(&device), AllocatorConfig::default()).unwrap();
    (device, allocator)
}

#[test]
fn slices_wrap_around_and_retire_in_order() {
    for profile in [MemoryProfile::discrete(), MemoryProfile::non_coherent()] {
        let (device, allocator) = real(profile);
        let mut ring = UploadRing::new(&allocator, 64 << 10).unwrap();
        let mut live: VecDeque<(memcarve::UploadSlice, u8)> = VecDeque::new();
        let mut rng = Rng::new(5);
        let mut wrapped = 0;
        let mut last_offset = 0;
        for step in 0..5000u64 {
            let size = rng.log_uniform(1, 8 << 10);
            let fill = (step % 251) as u8;
            match ring.push_bytes(&vec![fill; size as usize], 1 << rng.below(9)) {
                Ok(slice) => {
                    if slice.offset() < last_offset {
                        wrapped += 1;
                    }
                    last_offset = slice.offset();
                    live.push_back((slice, fill));
                }
                Err(Error::OutOfMemory { .. }) => {
                    // Full: the oldest slice's bytes are intact, then it is retired.
                    let (slice, fill) = live.pop_front().unwrap();
                    // SAFETY: the slice is live, so its bytes stay mapped and untouched by other slices.
                    let bytes =
                        unsafe { std::slice::from_raw_parts(ring.as_ptr(&slice), slice.size() as usize) };
                    assert!(bytes.iter().all(|&b| b == fill), "step {step}: slice overwritten");
                    ring.retire(slice).unwrap();
                }
                Err(other) => panic!("step {step}: {other}"),
            }
            if live.len() > 2 && rng.chance(3) {
                // Retiring the newest while older ones live is refused, changes nothing, and hands it back.
                let (newest, fill) = live.pop_back().unwrap();
                let refused = ring.retire(newest).unwrap_err();
                assert_eq!(refused.error, Error::OutOfOrderRetire);
                live.push_back((refused.slice, fill));
            }
        }
        while let Some((slice, _)) = live.pop_front() {
            ring.retire(slice).unwrap();
        }
        assert!(wrapped > 0, "the ring wrapped around");
        assert!(device.counters().maps >= 1);
        drop(ring);
        assert_eq!(device.counters().maps, device.counters().unmaps, "the ring's mapping was released");
        allocator.trim_empty_blocks();
        assert_eq!(device.counters().live_blocks, 0, "the ring's block was freed");
    }
}

#[test]
fn upload_ring_rejects_bad_requests() {
    let (_device, allocator) = real(MemoryProfile::discrete());
    let mut ring = UploadRing::new(&allocator, 4096).unwrap();
    assert_eq!(ring.push(0, 1).unwrap_err(), Error::ZeroSize);
    assert_eq!(ring.push(16, 3).unwrap_err(), Error::InvalidAlignment { alignment: 3 });
    assert!(matches!(ring.push(4097, 1).unwrap_err(), Error::OutOfMemory { .. }));
    let slice = ring.push(100, 16).unwrap();
    assert_eq!(
        ring.write(&slice, 90, &[0; 11]).unwrap_err(),
        Error::OutOfBounds { offset: 90, size: 11, len: 100 }
    );
    ring.retire(slice).unwrap();
    assert_eq!(ring.used_bytes(), 0);

    // A slice of another ring, even one lying past this ring's end, is refused and writes nothing.
    let mut large = UploadRing::new(&allocator, 64 << 10).unwrap();
    let first = large.push(32 << 10, 1).unwrap();
    let far = large.push(1024, 1).unwrap();
    assert_eq!(far.offset(), 32 << 10);
    assert_eq!(ring.write(&far, 0, &[0xAB; 1024]).unwrap_err(), Error::ForeignAllocation);
    let mine = ring.push(64, 1).unwrap();
    assert_eq!(mine.offset(), 0);
    assert_eq!(large.write(&mine, 0, &[0xAB; 64]).unwrap_err(), Error::ForeignAllocation);
    // Taken at its word, `mine` would have landed on the first bytes of `large`: its own first slice.
    // SAFETY: `first` is live in `large`, whose memory is mapped, and holds 32 KiB from there.
    let bytes = unsafe { std::slice::from_raw_parts(large.as_ptr(&first), 64) };
    assert!(bytes.iter().all(|&byte| byte != 0xAB), "the refused write left the other ring alone");
    ring.write(&mine, 0, &[7; 64]).unwrap();

    let device = Arc::new(HostDevice::new(HostConfig::new(MemoryProfile::discrete(), HostMode::Simulated)));
    let simulated = Allocator::new(device, AllocatorConfig::default()).unwrap();
    assert!(
        matches!(UploadRing::new(&simulated, 4096).unwrap_err(), Error::Device(_)),
        "simulated memory can't map"
    );
    assert_eq!(simulated.used_bytes(), 0, "the failed ring freed its allocation");
}
