//! Lull's client library, for applications of `lulld`: the Rust API and the C ABI of
//! `include/lull.h`. Rust code names it `lull`; C applications link `-llull` (`liblull.a` or
//! `liblull.so` in `target/release` or `target/debug`).
//!
//! - [`client`]: an ESM application — `esm_register(kind, handler)` and `esm_wait()`
//!   ([`client::EsmClient`]).
//! - [`device`]: an input device descriptor the daemon handed the app, read and interpreted
//!   here, with no daemon on the way.
//! - [`kds_client`]: the display server's client side — `kds_connect` (seed 000, figure 14), the
//!   commands, and the window manager's requests ([`kds_client::KdsAdmin`]).
//! - [`kds_runtime`]: the four KDS threads of an app (figure 19) with guiS's cooperative gates
//!   ([`kds_runtime::KdsApp`]).
//! - [`producer`]: a data-plane producer writing events into the apps' rings
//!   ([`producer::EsmProducer`]).
//! - [`capi`], [`capi_kds`], [`capi_producer`]: the C ABI over the four above.
//!
//! It talks to the daemon only through the OS layer (`lull_esm::protocol`, the KDS wire of
//! `lull_kds::wire`) and does not depend on the daemon crate.

pub mod capi;
pub mod capi_kds;
pub mod capi_producer;
pub mod client;
pub mod device;
pub mod kds_client;
pub mod kds_runtime;
pub mod producer;
