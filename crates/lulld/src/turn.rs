//! The daemon's fairness bound per turn of its loop, in a module of its own so that the
//! sources that honour it need not import the daemon that imports them.

/// Messages read from one ESM connection, or datagrams from the network source, per turn of the
/// loop. An app sends one `Wait` per event it
/// handles, so a well-behaved one has a few queued at most; one that floods its
/// socket has the rest read in later turns (the descriptor stays ready), after the other ready
/// connections and sources have been served.
pub const MAX_MESSAGES_PER_TURN: usize = 64;
