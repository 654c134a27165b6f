//! Shows what placekit would do to a node, without a cluster: the per-node diff, the
//! blockers, and the conditional JSON Patch that would be sent.
//!
//! ```text
//! cargo run -p placekit-core --example plan -- shared/core/examples/node-a100.json \
//!     ops.example.com.node-restriction.kubernetes.io/llm-pool=online \
//!     accelerator.example.com/gpu-family=a100 accelerator.example.com/gpu-memory=80gb \
//!     --taint dedicated=llm-online:NoSchedule --overwrite
//! ```

use std::process::ExitCode;

use placekit_core::plan::{ChangeRequest, NodeState, plan_node};
use placekit_core::syntax::{parse_label_changes, parse_taint};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!(
            "usage: plan NODE.json [KEY=VALUE | KEY-]... [--taint KEY=VALUE:EFFECT]... [--overwrite]"
        );
        return ExitCode::from(placekit_core::exit::USAGE);
    };
    let mut labels = Vec::new();
    let mut request = ChangeRequest::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--overwrite" => request.overwrite = true,
            "--taint" => match args.next().as_deref().map(parse_taint) {
                Some(Ok(taint)) => request.add_taints.push(taint),
                Some(Err(e)) => return fail(&e.to_string()),
                None => return fail("--taint needs a value"),
            },
            _ => labels.push(arg),
        }
    }
    request.labels = match parse_label_changes(&labels) {
        Ok(l) => l,
        Err(e) => return fail(&e.to_string()),
    };
    let node = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
        .and_then(|node| NodeState::from_node(&node).map_err(|e| e.to_string()))
    {
        Ok(n) => n,
        Err(e) => return fail(&format!("{path}: {e}")),
    };
    let plan = plan_node(&node, &request);
    print!("{}", plan.render_diff());
    for note in &plan.notes {
        println!("note: {note}");
    }
    if plan.is_blocked() {
        for blocker in &plan.blockers {
            println!("blocked: node/{}: {blocker}", plan.node());
        }
        return ExitCode::from(placekit_core::exit::PROBLEMS);
    }
    println!("\nJSON Patch (application/json-patch+json):");
    println!(
        "{}",
        serde_json::to_string_pretty(&plan.json_patch()).expect("serialisable")
    );
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(placekit_core::exit::USAGE)
}
