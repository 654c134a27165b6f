//! AL102 unknown-label-key (`--cluster`): judged with the other `--cluster` rules in `rules::cluster` (they share the candidate nodes), documented here.
use crate::rule::{RuleMeta, Severity};

pub static META: RuleMeta = RuleMeta {
    id: "AL102",
    name: "unknown-label-key",
    severity: Severity::Error,
    summary: "a key in a required constraint exists on no node (typo?)",
    doc: "## What it does
With `--cluster`, flags a label key in a `nodeSelector` or in a required node affinity
expression (`In`, `Exists`, `Gt`, `Lt`) that no live node carries, and names the nearest key
the nodes do carry.

## When it does not fire
- `NotIn` and `DoesNotExist` expressions: a key no node has satisfies them.
- Preferred affinity: a preference for a missing key only costs a score.

## Why it matters
A misspelled key (`topology.kubernetes.io/zones`, `nvidia.com/gpu-product`) matches no node,
so every replica stays Pending with `didn't match Pod's node affinity/selector`.

## Example
```yaml
nodeSelector:
  nvidia.com/gpu-product: NVIDIA-A100-SXM4-80GB
```

## Fix
Use the key the nodes carry, here `nvidia.com/gpu.product`.",
};
