//! Lull on stock Linux: the adapter that gives the pure core a real clock, real processes and
//! real file descriptors.

pub mod apps;
pub mod audit;
pub mod bench;
pub mod capi;
pub mod capi_kds;
pub mod channel;
pub mod client;
pub mod daemon;
pub mod evdev;
pub mod event_loop;
pub mod experiment;
pub mod fbdev;
pub mod freezer;
pub mod guis;
pub mod kds;
pub mod kds_client;
pub mod kds_demo;
pub mod kds_runtime;
pub mod live;
pub mod measure;
pub mod png;
pub mod protocol;
pub mod replay;
pub mod respondent;
pub mod stack;
pub mod sys;
