//! Resource classes and Vulkan's buffer-image granularity: linear resources (buffers, linear images) and
//! optimally tiled images must not share a `granularity`-sized page, because the driver may alias their
//! layouts within one page. Allocators consult [`ResourceClass::conflicts_with`] only when the granularity is
//! larger than one byte.

/// What kind of resource a range will back. Decides which neighbours may share a granularity page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(u8)]
pub enum ResourceClass {
    /// Not known: conflicts with every class, itself included, so it is always kept apart.
    #[default]
    Unknown = 0,
    /// A buffer (linear layout).
    Buffer = 1,
    /// An image with `VK_IMAGE_TILING_LINEAR` (linear layout).
    LinearImage = 2,
    /// An image with `VK_IMAGE_TILING_OPTIMAL` (opaque, non-linear layout).
    OptimalImage = 3,
}

impl ResourceClass {
    /// Every class, in the order of their `u8` values.
    pub const ALL: [ResourceClass; 4] = [
        ResourceClass::Unknown,
        ResourceClass::Buffer,
        ResourceClass::LinearImage,
        ResourceClass::OptimalImage,
    ];

    /// Whether a range of class `self` and one of class `other` must not share a granularity page.
    /// The relation is symmetric.
    #[inline]
    pub const fn conflicts_with(self, other: ResourceClass) -> bool {
        match (self, other) {
            (ResourceClass::Unknown, _) | (_, ResourceClass::Unknown) => true,
            (ResourceClass::OptimalImage, ResourceClass::OptimalImage) => false,
            (ResourceClass::OptimalImage, _) | (_, ResourceClass::OptimalImage) => true,
            _ => false,
        }
    }

    /// The class with this `u8` value, if any.
    pub const fn from_u8(value: u8) -> Option<ResourceClass> {
        match value {
            0 => Some(ResourceClass::Unknown),
            1 => Some(ResourceClass::Buffer),
            2 => Some(ResourceClass::LinearImage),
            3 => Some(ResourceClass::OptimalImage),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ResourceClass::{self, *};

    #[test]
    fn conflict_relation_is_symmetric_and_matches_vulkan_rules() {
        for a in ResourceClass::ALL {
            for b in ResourceClass::ALL {
                assert_eq!(a.conflicts_with(b), b.conflicts_with(a), "{a:?} {b:?}");
            }
        }
        assert!(!Buffer.conflicts_with(Buffer));
        assert!(!Buffer.conflicts_with(LinearImage));
        assert!(!OptimalImage.conflicts_with(OptimalImage));
        assert!(Buffer.conflicts_with(OptimalImage));
        assert!(LinearImage.conflicts_with(OptimalImage));
        assert!(Unknown.conflicts_with(Unknown));
        assert!(Unknown.conflicts_with(Buffer));
    }

    #[test]
    fn from_u8_round_trips() {
        for c in ResourceClass::ALL {
            assert_eq!(ResourceClass::from_u8(c as u8), Some(c));
        }
        assert_eq!(ResourceClass::from_u8(4), None);
    }
}
