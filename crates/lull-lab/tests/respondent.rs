//! The messaging test's respondent over real loopback TCP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use lull_apps::MAX_RESPONDENT_LINE_BYTES;
use lull_lab::respondent::{Respondent, RespondentCounters, RespondentHandle, ERROR_PREFIX};
use lull_workload::messaging::{reply_text, WORDS};
use lull_workload::rng::SplitMix64;

const SEED: u64 = 42;

fn serve() -> RespondentHandle {
    Respondent::bind("127.0.0.1:0")
        .expect("bind loopback")
        .with_seed(SEED)
        .spawn()
        .expect("spawn")
}

struct Client {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(server: &RespondentHandle) -> Client {
        let stream = TcpStream::connect(server.local_addr()).expect("connect");
        let reader = BufReader::new(stream.try_clone().expect("clone"));
        Client { stream, reader }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read a line");
        line
    }

    fn at_eof(&mut self) -> bool {
        let mut rest = Vec::new();
        self.reader.read_to_end(&mut rest).expect("read to end");
        rest.is_empty()
    }
}

/// The replies a connection gets, in order.
fn expected_replies(n: usize) -> Vec<String> {
    let mut rng = SplitMix64::new(SEED);
    (0..n).map(|_| reply_text(&mut rng) + "\n").collect()
}

#[test]
fn three_messages_round_trip_and_stop_counts_them() {
    let server = serve();
    let mut c = Client::connect(&server);
    let messages = ["hello there\n", "see you at lunch\n", "ok\n"];
    let mut got = Vec::new();
    for m in messages {
        c.send(m.as_bytes());
        got.push(c.line());
    }
    assert_eq!(got, expected_replies(3));
    for reply in &got {
        let words = reply.trim_end_matches('\n');
        assert!(words.split(' ').all(|w| WORDS.contains(&w)), "{reply:?}");
    }
    drop(c);
    let counters = server.stop();
    assert_eq!(
        counters,
        RespondentCounters {
            connections: 1,
            messages: 3,
            bad_lines: 0,
            bytes_in: messages.iter().map(|m| m.len() as u64).sum(),
            bytes_out: got.iter().map(|r| r.len() as u64).sum(),
        }
    );
}

#[test]
fn non_utf8_gets_an_error_line_and_the_connection_goes_on() {
    let server = serve();
    let mut c = Client::connect(&server);
    c.send(b"caf\xe9 \xff\xfe\n");
    let error = c.line();
    assert!(error.starts_with(ERROR_PREFIX), "{error:?}");
    c.send(b"still there\n");
    assert_eq!(c.line(), expected_replies(1)[0]);
    drop(c);
    let counters = server.stop();
    assert_eq!((counters.messages, counters.bad_lines), (1, 1));
}

#[test]
fn an_overlong_line_gets_an_error_and_the_connection_closes() {
    let server = serve();
    // The longest line allowed is answered.
    let mut ok = Client::connect(&server);
    let mut longest = vec![b'a'; MAX_RESPONDENT_LINE_BYTES];
    longest.push(b'\n');
    ok.send(&longest);
    assert_eq!(ok.line(), expected_replies(1)[0]);

    // One byte more, with its newline or still waiting for one.
    for tail in [&b"a\n"[..], &b"a"[..]] {
        let mut c = Client::connect(&server);
        c.send(b"first\n");
        assert_eq!(c.line(), expected_replies(1)[0]);
        let mut line = vec![b'b'; MAX_RESPONDENT_LINE_BYTES];
        line.extend_from_slice(tail);
        c.send(&line);
        let error = c.line();
        assert!(error.starts_with(ERROR_PREFIX), "{error:?}");
        assert!(c.at_eof(), "the server closes the connection");
    }
    let counters = server.stop();
    assert_eq!(counters.connections, 3);
    assert_eq!((counters.messages, counters.bad_lines), (3, 2));
}

#[test]
fn two_clients_at_once_each_get_the_seeds_replies() {
    let server = serve();
    let mut a = Client::connect(&server);
    let mut b = Client::connect(&server);
    let expected = expected_replies(2);
    a.send(b"from a\n");
    b.send(b"from b\n");
    assert_eq!(b.line(), expected[0]);
    assert_eq!(a.line(), expected[0]);
    // Two lines in one write get two replies.
    b.send(b"one\ntwo\n");
    let three = expected_replies(3);
    assert_eq!(b.line(), three[1]);
    assert_eq!(b.line(), three[2]);
    a.send(b"again\n");
    assert_eq!(a.line(), expected[1]);
    let counters = server.stop();
    assert_eq!((counters.connections, counters.messages), (2, 5));
    // The open connections were closed by the stop.
    assert!(a.at_eof() && b.at_eof());
}

#[test]
fn a_client_leaving_mid_line_does_not_disturb_the_server() {
    let server = serve();
    let mut gone = Client::connect(&server);
    gone.send(b"half a mess");
    drop(gone);
    let mut c = Client::connect(&server);
    c.send(b"whole\n");
    assert_eq!(c.line(), expected_replies(1)[0]);
    let counters = server.stop();
    assert_eq!((counters.connections, counters.messages), (2, 1));
}

#[test]
fn stop_with_nobody_connected_returns_zeros() {
    assert_eq!(serve().stop(), RespondentCounters::default());
}
