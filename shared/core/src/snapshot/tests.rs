//! Unit tests of the parent module.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::journal::TEMP_MARK;
use super::*;
use crate::plan::NodePlan;
use crate::plan::{ChangeRequest, NodeState, plan_node};
use crate::syntax::parse_label_changes;

fn header(nodes: usize) -> SnapshotHeader {
    let plans: Vec<NodePlan> = (0..nodes)
        .map(|i| {
            let state = NodeState {
                name: format!("gpu-{i}"),
                uid: format!("uid-{i}"),
                resource_version: "1".into(),
                labels: [("pool".to_string(), "batch".to_string())].into(),
                taints: vec![],
                annotations: Default::default(),
                nfd_keys: Default::default(),
                other_annotations: false,
            };
            plan_node(
                &state,
                &ChangeRequest {
                    labels: parse_label_changes(&["pool=online"]).unwrap(),
                    overwrite: true,
                    ..Default::default()
                },
            )
        })
        .collect();
    SnapshotHeader::new(
        "kubectl-nodelabel",
        "0.1.0",
        "kind-gpu/admin",
        &ClusterIdentity {
            server: "https://127.0.0.1:6443".into(),
            ..Default::default()
        },
        vec!["kubectl-nodelabel".into(), "set".into()],
        "set",
        &plans,
    )
}

#[test]
fn create_load_and_journal() {
    let dir = tempfile::tempdir().unwrap();
    let store = SnapshotStore::new(dir.path().join("snaps"));
    let h = header(3);
    let mut journal = store.create(&h).unwrap();
    let path = journal.path().to_path_buf();
    assert!(
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .contains("-nodelabel-set-kind-gpu_admin")
    );
    journal
        .record_outcome("gpu-0", OutcomeKind::Applied, None)
        .unwrap();
    journal
        .record_outcome(
            "gpu-1",
            OutcomeKind::Conflict,
            Some("testing value failed".into()),
        )
        .unwrap();
    drop(journal);
    let snap = Snapshot::load(&path).unwrap();
    assert_eq!(snap.header, h);
    assert_eq!(snap.outcome_of("gpu-0"), Some(OutcomeKind::Applied));
    assert_eq!(snap.outcome_of("gpu-1"), Some(OutcomeKind::Conflict));
    assert_eq!(snap.outcome_of("gpu-2"), None);
    assert_eq!(
        snap.outcome_counts(),
        vec![
            (Some(OutcomeKind::Applied), 1),
            (Some(OutcomeKind::Conflict), 1),
            (None, 1)
        ]
    );
    let here = ClusterIdentity {
        server: "https://127.0.0.1:6443/".into(),
        ..Default::default()
    };
    assert_eq!(
        store
            .last_undoable("kubectl-nodelabel", &here)
            .unwrap()
            .path,
        path
    );
    let elsewhere = ClusterIdentity {
        server: "https://10.0.0.1:6443".into(),
        ..Default::default()
    };
    assert!(
        store
            .last_undoable("kubectl-nodelabel", &elsewhere)
            .is_err()
    );
}

#[cfg(unix)]
#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = SnapshotStore::new(dir.path().join("snaps"));
    let journal = store.create(&header(1)).unwrap();
    let mode = fs::metadata(journal.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let dir_mode = fs::metadata(store.dir()).unwrap().permissions().mode();
    assert_eq!(dir_mode & 0o777, 0o700);
}

/// `--backup=PATH` indexes the snapshot in the state directory: one that others can write
/// is refused before the snapshot is written, as for a snapshot in the store itself.
#[cfg(unix)]
#[test]
fn a_backup_is_not_indexed_in_a_state_directory_others_can_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("snaps");
    fs::create_dir(&state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o777)).unwrap();
    let store = SnapshotStore::new(state.clone());
    let backup = dir.path().join("backup.jsonl");
    assert!(matches!(
        store.create_at(&backup, &header(1)),
        Err(SnapshotError::Untrusted(_))
    ));
    assert!(!backup.exists(), "nothing written before the check");
    assert_eq!(fs::read_dir(&state).unwrap().count(), 0);
}

#[test]
fn refuses_to_overwrite_an_explicit_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("backup.jsonl");
    write_snapshot(&path, &header(1)).unwrap();
    assert!(matches!(
        write_snapshot(&path, &header(1)),
        Err(SnapshotError::Exists { .. })
    ));
}

#[test]
fn unwritable_location_is_an_error_before_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing-dir").join("x.jsonl");
    assert!(matches!(
        write_snapshot(&path, &header(1)),
        Err(SnapshotError::Io { .. })
    ));
}

#[test]
fn torn_last_line_is_ignored_but_corruption_inside_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut journal = write_snapshot(&path, &header(2)).unwrap();
    journal
        .record_outcome("gpu-0", OutcomeKind::Applied, None)
        .unwrap();
    drop(journal);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"kind\":\"Outc").unwrap();
    let snap = Snapshot::load(&path).unwrap();
    assert_eq!(snap.records.len(), 1);
    f.write_all(
        b"\n{\"kind\":\"Outcome\",\"node\":\"gpu-1\",\"outcome\":\"applied\",\"at\":\"x\"}\n",
    )
    .unwrap();
    assert!(matches!(
        Snapshot::load(&path),
        Err(SnapshotError::Malformed { line: 3, .. })
    ));
}

#[test]
fn appending_first_repairs_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    // A header longer than one read-back chunk.
    let mut journal = write_snapshot(&path, &header(900)).unwrap();
    assert!(fs::metadata(&path).unwrap().len() > 64 * 1024);
    journal
        .record_outcome("gpu-0", OutcomeKind::Applied, None)
        .unwrap();
    drop(journal);
    let mark = |path: &Path| {
        let mut j = Journal::open_existing(path).unwrap();
        j.record(&JournalRecord::RolledBack {
            by: "rb".into(),
            partial: false,
            at: "t".into(),
            left_alone: Vec::new(),
        })
        .unwrap();
    };
    // A torn record: cut off, and the new record lands on its own line.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"kind\":\"Outcome\",\"node\":\"gpu-1\",\"outc")
        .unwrap();
    mark(&path);
    let snap = Snapshot::load(&path).unwrap();
    assert_eq!(snap.records.len(), 2);
    assert!(snap.fully_rolled_back());
    // A whole record missing only its newline: kept and terminated.
    f.write_all(b"{\"kind\":\"Outcome\",\"node\":\"gpu-1\",\"outcome\":\"applied\",\"at\":\"x\"}")
        .unwrap();
    mark(&path);
    let snap = Snapshot::load(&path).unwrap();
    assert_eq!(snap.records.len(), 4);
    assert_eq!(snap.outcome_of("gpu-1"), Some(OutcomeKind::Applied));
    // Whole lines only, none empty.
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n') && !text.contains("\n\n"));
}

#[cfg(target_os = "linux")]
#[test]
fn temp_files_of_dead_processes_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = SnapshotStore::new(dir.path());
    let make = |name: String, age_secs: u64| {
        let path = dir.path().join(name);
        let file = File::create(&path).unwrap();
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_secs);
        file.set_modified(when).unwrap();
        path
    };
    // pid_max is at most 2^22, so pid 4999999 cannot exist; pid 1 always does.
    let stale = make(format!(".x{SNAPSHOT_SUFFIX}{TEMP_MARK}4999999"), 3600);
    let fresh = make(format!(".w{SNAPSHOT_SUFFIX}{TEMP_MARK}4999999"), 5);
    let live = make(format!(".y{SNAPSHOT_SUFFIX}{TEMP_MARK}1"), 3600);
    let not_ours = make(".keep.tmp-4999999".to_string(), 3600);
    drop(store.create(&header(1)).unwrap());
    assert!(!stale.exists());
    assert!(
        fresh.exists(),
        "a file this recent may be another host's header"
    );
    assert!(live.exists());
    assert!(not_ours.exists(), "another program's temp file");
}

#[test]
fn unreadable_snapshots_are_listed_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let store = SnapshotStore::new(dir.path());
    drop(store.create(&header(1)).unwrap());
    let broken = dir.path().join(format!("x{SNAPSHOT_SUFFIX}"));
    fs::write(&broken, "{\"apiVersion\":\"placekit.dev/v2\"\n").unwrap();
    let (readable, unreadable) = store.list_all().unwrap();
    assert_eq!(readable.len(), 1);
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0].path, broken);
    assert!(unreadable[0].reason.contains(":1:"), "{:?}", unreadable[0]);
}

#[test]
fn version_1_snapshots_are_read_with_their_server_as_identity() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.snapshot.jsonl");
    fs::write(
            &path,
            concat!(
                r#"{"apiVersion":"placekit.dev/v1","kind":"Snapshot","tool":"kubectl-nodelabel","toolVersion":"0.1.0","createdAt":"2026-11-29T21:40:00Z","context":"gpu-prod","server":"https://10.0.0.1:6443/","commandLine":["kubectl-nodelabel","set"],"operation":"set","nodes":[]}"#,
                "\n",
                r#"{"kind":"RolledBack","by":"x.jsonl","at":"2026-11-29T21:41:00Z"}"#,
                "\n"
            ),
        )
        .unwrap();
    let snap = Snapshot::load(&path).unwrap();
    assert_eq!(snap.header.cluster().server, "https://10.0.0.1:6443");
    assert!(snap.header.cluster().same_cluster(&ClusterIdentity {
        server: "https://10.0.0.1:6443".into(),
        ca_fingerprint: Some("sha256:ab".into()),
        kube_system_uid: Some("u".into()),
    }));
    assert!(
        snap.fully_rolled_back(),
        "an old RolledBack record has no `partial`"
    );
}

#[test]
fn rejects_unknown_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    fs::write(&path, "{\"apiVersion\":\"placekit.dev/v9\"}\n").unwrap();
    assert!(matches!(
        Snapshot::load(&path),
        Err(SnapshotError::UnsupportedVersion { .. })
    ));
}

#[test]
fn cluster_identity_prefers_the_kube_system_uid() {
    let id = |server: &str, ca: Option<&str>, uid: Option<&str>| ClusterIdentity {
        server: server.into(),
        ca_fingerprint: ca.map(Into::into),
        kube_system_uid: uid.map(Into::into),
    };
    let a = id("https://127.0.0.1:6443", Some("sha256:a"), Some("u1"));
    assert!(a.same_cluster(&id("https://127.0.0.1:6443/", Some("sha256:a"), Some("u1"))));
    assert!(
        !a.same_cluster(&id("https://127.0.0.1:6443", Some("sha256:a"), Some("u2"))),
        "a recreated cluster at the same URL"
    );
    assert!(a.same_cluster(&id("https://lb.example:443", None, Some("u1"))));
    assert!(!a.same_cluster(&id("https://127.0.0.1:6443", Some("sha256:b"), None)));
    assert!(
        !a.same_cluster(&id("https://127.0.0.1:6443", Some("sha256:b"), Some("u1"))),
        "a server behind another CA that claims the cluster's kube-system uid is not the cluster"
    );
    assert!(a.same_cluster(&id("https://127.0.0.1:6443", None, None)));
    assert!(!a.same_cluster(&id("https://127.0.0.1:6444", None, None)));
    assert_eq!(
        normalize_server("https://user:secret@example.com:6443/"),
        "https://example.com:6443"
    );
}

#[test]
fn last_undoable_walks_back_and_skips_rollbacks() {
    let dir = tempfile::tempdir().unwrap();
    let store = SnapshotStore::new(dir.path().join("snaps"));
    let here = header(1).cluster();
    let first = store.create(&header(1)).unwrap().path().to_path_buf();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let backup = dir.path().join("backup.jsonl");
    let second = store
        .create_at(&backup, &header(1))
        .unwrap()
        .path()
        .to_path_buf();
    assert_eq!(
        store
            .last_undoable("kubectl-nodelabel", &here)
            .unwrap()
            .path,
        second
    );
    std::thread::sleep(std::time::Duration::from_millis(5));
    let mut undo = header(1);
    undo.rollback_of = Some(second.display().to_string());
    let undo_path = store.create(&undo).unwrap().path().to_path_buf();
    let mark = |of: &Path, by: &Path, partial: bool| {
        Journal::open_existing(of)
            .unwrap()
            .record(&JournalRecord::RolledBack {
                by: by.display().to_string(),
                partial,
                at: now_rfc3339(),
                left_alone: Vec::new(),
            })
            .unwrap()
    };
    mark(&second, &undo_path, true);
    assert_eq!(
        store
            .last_undoable("kubectl-nodelabel", &here)
            .unwrap()
            .path,
        second,
        "a partial rollback leaves it undoable"
    );
    mark(&second, &undo_path, false);
    assert_eq!(
        store
            .last_undoable("kubectl-nodelabel", &here)
            .unwrap()
            .path,
        first
    );
    mark(&first, &undo_path, false);
    assert!(store.last_undoable("kubectl-nodelabel", &here).is_err());
    assert_eq!(store.list().unwrap().len(), 3, "the backup is indexed");
}

#[test]
fn rollback_marks_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    drop(write_snapshot(&path, &header(1)).unwrap());
    Journal::open_existing(&path)
        .unwrap()
        .record(&JournalRecord::RolledBack {
            by: "other.jsonl".into(),
            partial: false,
            at: now_rfc3339(),
            left_alone: Vec::new(),
        })
        .unwrap();
    assert_eq!(
        Snapshot::load(&path).unwrap().rolled_back_by(),
        vec!["other.jsonl"]
    );
}
