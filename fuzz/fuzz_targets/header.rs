//! Feeds arbitrary bytes to the transfer decoders: they must return an error, never panic, and
//! never accept a name the receiver would refuse.
#![no_main]

use iolab::transfer::protocol::{self, Frame, HELLO_LEN, Hello};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() >= HELLO_LEN {
        let mut h = [0u8; HELLO_LEN];
        h.copy_from_slice(&data[..HELLO_LEN]);
        let _ = Hello::decode(&h);
    }
    if let Ok(Frame::File(header)) = protocol::read_frame(&mut &data[..], "fuzz") {
        assert!(protocol::check_name(header.name.as_bytes()).is_ok());
        assert!(!header.name.contains('/') && !header.name.contains(".."));
    }
});
