//! Fuzz targets live in fuzz_targets/.
