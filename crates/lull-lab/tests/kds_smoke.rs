//! The display server end to end: attach, figure 18, snapshot, window-manager round trip.

use lull::kds_client::KdsAdmin;
use lull::kds_runtime::{AppOptions, KdsApp};
use lull_kds::Rect;
use lull_model::{Stacking, ThreadCategory};
use lulld::test_support::TestDaemon;

#[test]
fn figure_18_through_the_runtime() {
    let daemon = TestDaemon::start_kds("kds-smoke", 64, 48);
    let kds_path = daemon.kds_path();
    let app = KdsApp::attach(
        &kds_path,
        &AppOptions {
            width: 25,
            height: 25,
            name: "fig18".into(),
            guis: true,
        },
    )
    .unwrap();
    assert_eq!(app.window(), Rect::new(19, 11, 25, 25));
    let (tx, rx) = std::sync::mpsc::channel();
    app.run_on(ThreadCategory::Drawing, move |ctx| {
        let s = lull_kds::figure18::surface();
        ctx.compose(1, s).unwrap();
        ctx.draw(1, 0, 0).unwrap();
        tx.send(()).unwrap();
    })
    .unwrap();
    rx.recv().unwrap();
    let mut admin = KdsAdmin::connect(&kds_path).unwrap();
    let shot = admin.snapshot().unwrap();
    assert_eq!(shot.get(19, 11), Some(0xffff0000));
    assert_eq!(shot.get(19 + 24, 11 + 24), Some(0xff00ff00));
    assert_eq!(shot.get(19 + 14, 11), Some(0xffff0000));
    assert_eq!(shot.get(19 + 20, 11 + 2), Some(0));
    let w = admin.windows().unwrap();
    assert_eq!(w.len(), 1);
    admin.background(app.app()).unwrap();
    // The push arrives on the channel thread; wait for it through the runtime's counters.
    app.wait_until(|c| c.state_pushes >= 2);
    assert_eq!(app.window_state().stacking, Stacking::Background);
    admin.foreground(app.app()).unwrap();
    app.wait_until(|c| c.state_pushes >= 3);
    assert_eq!(app.window_state().stacking, Stacking::Foreground);
    app.detach().unwrap();
    assert!(admin.windows().unwrap().is_empty());
    let report = daemon.stop();
    let kds = report.kds.unwrap();
    assert_eq!(kds.server.attached, 1);
    assert_eq!(kds.server.detached, 1);
    report.accounting.unwrap();
}
