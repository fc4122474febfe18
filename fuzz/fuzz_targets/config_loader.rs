//! The queues.yaml loader (src/config): any text is either a configuration
//! or a clear error, never a panic; a parse is repeatable and its checksum
//! is that of the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sicore::config;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let first = config::parse(text);
    match &first {
        Ok(c) => {
            assert!(
                !c.partitions.is_empty(),
                "a configuration without partitions"
            );
            assert_eq!(c.checksum, config::checksum(text));
            for p in &c.partitions {
                assert_eq!(p.queues.len(), 1, "partition {} has one root", p.name);
                assert_eq!(p.queues[0].name, config::ROOT_QUEUE);
            }
        }
        Err(e) => assert!(!e.to_string().is_empty(), "an error without a message"),
    }
    // Validation is a function of the text.
    assert_eq!(first, config::parse(text));
    // The loader path (in-memory policy config) agrees with parse.
    let configs = [("fuzz".to_string(), text.to_string())].into();
    assert_eq!(
        config::load("fuzz", "", &configs).map(|l| l.config).ok(),
        first.ok()
    );
});
