use super::*;

const MS: u64 = 1_000_000;
const PERIOD_NS: u64 = 200 * MS;

fn fact(tid: u32, tgid: u32, class: u32, cpu_ns: u64) -> ThreadFact {
    ThreadFact {
        tid,
        tgid,
        class,
        input_ns: 0,
        cpu_ns,
    }
}

#[test]
fn cpu_lists_parse_and_bad_ones_are_refused() {
    assert_eq!(CpuSets::parse("0-1", 2).unwrap().clusters(), &[vec![0, 1]]);
    assert_eq!(
        CpuSets::parse("0/1", 2).unwrap().clusters(),
        &[vec![0], vec![1]]
    );
    assert_eq!(
        CpuSets::parse("0,1/2-3", 4).unwrap().clusters(),
        &[vec![0, 1], vec![2, 3]]
    );
    assert_eq!(CpuSets::parse("0,1/2-3", 4).unwrap().to_string(), "0,1/2,3");
    assert_eq!(
        CpuSets::parse("0/1/2", 3),
        Err(CpuSetsError::TooManyClusters(3))
    );
    assert_eq!(
        CpuSets::parse("0/2", 2),
        Err(CpuSetsError::NoSuchCpu { cpu: 2, cpus: 2 })
    );
    assert_eq!(CpuSets::parse("0,0", 2), Err(CpuSetsError::Repeated(0)));
    assert_eq!(CpuSets::parse("0/", 2), Err(CpuSetsError::Empty));
    assert!(matches!(
        CpuSets::parse("x", 2),
        Err(CpuSetsError::Syntax(_))
    ));
    assert!(matches!(
        CpuSets::parse("1-0", 2),
        Err(CpuSetsError::Syntax(_))
    ));
}

#[test]
fn capacities_split_little_from_big_and_equal_ones_make_one_cluster() {
    let one = |c: &[Option<u32>]| CpuSets::from_capacities(c).clusters().to_vec();
    assert_eq!(one(&[None, None]), vec![vec![0, 1]]);
    assert_eq!(one(&[Some(1024), Some(1024)]), vec![vec![0, 1]]);
    // A capacity missing for one CPU: nothing to compare it by.
    assert_eq!(one(&[Some(512), None]), vec![vec![0, 1]]);
    assert_eq!(one(&[Some(512), Some(1024)]), vec![vec![0], vec![1]]);
    assert_eq!(
        one(&[Some(1024), Some(446), Some(1024), Some(446)]),
        vec![vec![1, 3], vec![0, 2]]
    );
}

/// Seed 001 §2.2 / figure 2(b) on a machine of two equal CPUs: the social app in front (medium)
/// and two busy threads of apps behind (low). Allocation and migration (§3.2.2) give the front
/// thread a core of its own and keep both background threads on the other.
#[test]
fn the_front_thread_gets_a_cpu_of_its_own_and_the_background_is_kept_off_it() {
    let sets = CpuSets::parse("0-1", 2).unwrap();
    let mut u = UcsgPlacer::new(&sets, 0).unwrap();
    // Background apps' threads first, as when the file manager comes forward over ZIP and FTP.
    let (zip, ftp, front) = (11, 21, 31);
    let mut cpu = [0u64; 3];
    let facts = |cpu: &[u64; 3]| {
        vec![
            fact(zip, 10, 3, cpu[0]),
            fact(ftp, 20, 3, cpu[1]),
            fact(front, 30, 1, cpu[2]),
        ]
    };
    u.observe(0, &facts(&cpu));
    assert_eq!(u.sensitivity(front), Some(Sensitivity::Medium));
    assert_eq!(u.sensitivity(zip), Some(Sensitivity::Low));
    for period in 1..=5u64 {
        // Each thread ran the whole period: every CPU busy (the background threads share one).
        let p = u.placement();
        for (i, tid) in [zip, ftp, front].into_iter().enumerate() {
            let sharing = p.values().filter(|&&c| c == p[&tid]).count() as u64;
            cpu[i] += PERIOD_NS / sharing;
        }
        u.observe(period * PERIOD_NS, &facts(&cpu));
        let p = u.placement();
        assert_eq!(p.len(), 3);
        assert_ne!(p[&front], p[&zip], "period {period}: {p:?}");
        assert_ne!(p[&front], p[&ftp], "period {period}: {p:?}");
    }
    let c = u.counters();
    assert_eq!((c.threads, c.samples), (3, 5));
    assert!(c.placements >= 3, "{c:?}");
}

/// A thread whose record leaves the facts map leaves UCSG; a front thread's input makes its app
/// high for 500 ms (figure 3), then medium again.
#[test]
fn exits_leave_and_an_input_makes_the_front_app_high_for_the_hold() {
    let sets = CpuSets::parse("0-1", 2).unwrap();
    let mut u = UcsgPlacer::new(&sets, 0).unwrap();
    let mut f = vec![fact(1, 1, 1, 0), fact(2, 2, 3, 0)];
    u.observe(10 * MS, &f);
    assert_eq!(u.placement().len(), 2);
    f[0].input_ns = 20 * MS;
    u.observe(30 * MS, &f);
    assert_eq!(u.sensitivity(1), Some(Sensitivity::High));
    assert_eq!(u.counters().touches, 1);
    // The same input seen again is no new touch.
    u.observe(40 * MS, &f);
    assert_eq!(u.counters().touches, 1);
    u.observe(519 * MS, &f);
    assert_eq!(u.sensitivity(1), Some(Sensitivity::High));
    u.observe(520 * MS, &f);
    assert_eq!(u.sensitivity(1), Some(Sensitivity::Medium));
    f.pop();
    u.observe(530 * MS, &f);
    assert_eq!(u.placement().keys().copied().collect::<Vec<_>>(), vec![1]);
    assert_eq!(u.sensitivity(2), None);
    // The front app going behind, none after it: every app low.
    f[0].class = 3;
    u.observe(540 * MS, &f);
    assert_eq!(u.sensitivity(1), Some(Sensitivity::Low));
    assert_eq!(u.counters().foreground_changes, 2);
}

/// LITTLE/big (§3.2.3): a light load goes to the LITTLE cluster after three periods below the
/// big one's lowest level; an input puts the frequency at the top, which is the big cluster's,
/// and every placed thread moves there, slot for slot.
#[test]
fn cluster_switching_moves_the_placement_between_little_and_big() {
    let sets = CpuSets::parse("0/1", 2).unwrap();
    let mut u = UcsgPlacer::new(&sets, 0).unwrap();
    assert_eq!(u.cluster(), 1);
    let mut f = vec![fact(1, 1, 1, 0), fact(2, 2, 3, 0)];
    u.observe(0, &f);
    assert_eq!(
        u.placement().values().copied().collect::<Vec<_>>(),
        vec![1, 1]
    );
    let mut t = 0;
    // Light: 1 ms of CPU a period each.
    for _ in 0..6 {
        t += PERIOD_NS;
        for x in &mut f {
            x.cpu_ns += MS;
        }
        u.observe(t, &f);
    }
    assert_eq!(u.cluster(), 0, "{:?}", u.counters());
    assert_eq!(
        u.placement().values().copied().collect::<Vec<_>>(),
        vec![0, 0]
    );
    f[0].input_ns = t + MS;
    u.observe(t + 2 * MS, &f);
    assert_eq!(u.cluster(), 1);
    assert_eq!(
        u.placement().values().copied().collect::<Vec<_>>(),
        vec![1, 1]
    );
    assert_eq!(u.counters().cluster_switches, 2);
}
