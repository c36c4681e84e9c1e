//! What the commands print as JSON: each result inside one typed envelope.

use iolab::experiments::host::Host;

/// A result the CLI prints: as JSON, its own fields inside an [`Envelope`], serialised once
/// from the typed values.
pub trait Enveloped: serde::Serialize {
    /// It records the machine it measured in a `host` field of its own (the envelope then adds
    /// none).
    const OWN_HOST: bool = false;
    /// It times something, so a busy machine is worth a warning (not so for a look at the
    /// page cache or /proc/meminfo).
    const TIMED: bool = true;
}

/// Every JSON output: the result's fields, then what else the machine was doing, what the
/// output is (`schema`: the command) and where it was measured.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Envelope<'a, T: serde::Serialize> {
    #[serde(flatten)]
    pub(super) result: &'a T,
    pub(super) interference: &'a iolab::measure::interference::Interference,
    pub(super) schema: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) host: Option<&'a Host>,
}

/// The results the commands print, and which of them record their own host.
macro_rules! documents {
    ($($t:ty),* $(,)?; own host: $($h:ty),* $(,)?; untimed: $($u:ty),* $(,)?) => {
        $(impl Enveloped for $t {})*
        $(impl Enveloped for $h { const OWN_HOST: bool = true; })*
        $(impl Enveloped for $u { const TIMED: bool = false; })*
    };
}

documents!(
    iolab::experiments::access::AccessResult,
    iolab::experiments::advise::AdviseResult,
    iolab::experiments::run::ClassicResult,
    iolab::experiments::fast::FastResult,
    iolab::experiments::ior::IorResult,
    iolab::experiments::partb::PartBResult,
    iolab::experiments::pollute::PolluteResult,
    iolab::experiments::replay::ReplayResult,
    iolab::experiments::run2::Run2Result,
    iolab::experiments::squeeze::SqueezeResult,
    iolab::experiments::transfer::TransferResult,
    iolab::experiments::vm::VmResult,
    iolab::transfer::SideReport;
    own host:
    iolab::experiments::read::ReadResult,
    iolab::experiments::sweep::SweepResult,
    iolab::experiments::syscalls::SyscallsResult,
    iolab::experiments::write::WriteResult;
    untimed:
    iolab::experiments::page_cache::CacheReport,
    iolab::cache::meminfo::PageCache,
);

impl<T: Enveloped> Enveloped for iolab::report::WithFindings<'_, T> {
    const OWN_HOST: bool = T::OWN_HOST;
    const TIMED: bool = T::TIMED;
}
