//! Rust-native API.
