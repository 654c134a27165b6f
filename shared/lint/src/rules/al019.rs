//! AL019 misspelled-accelerator-resource finds an accelerator resource a known vendor's
//! device plugin does not advertise, next to one it does.
use crate::podspec::all_containers;
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::Node;
use placekit_core::suggest::edit_distance;

pub static META: RuleMeta = RuleMeta {
    id: "AL019",
    name: "misspelled-accelerator-resource",
    severity: Severity::Warning,
    summary: "an accelerator resource a known vendor's device plugin does not advertise, next to one it does",
    doc: "## What it does
Flags a container resource (requests or limits) that is a near miss of an accelerator
resource a vendor's device plugin advertises: the vendor's resource name under another
domain (`gaudi.habana.ai/gaudi` for `habana.ai/gaudi`, `nvidia/gpu` for `nvidia.com/gpu`),
or the name one or two characters off (`nvidia.com/gpus`, `amd.con/gpu`). The resources
known: `nvidia.com/gpu`, `amd.com/gpu`, `habana.ai/gaudi`, `gpu.intel.com/i915`,
`gpu.intel.com/xe` (and Intel's `dxg`, `millicores`, `memory.max`, `*_monitoring`),
`google.com/tpu`, `aws.amazon.com/neuron`, `aws.amazon.com/neuroncore`,
`aws.amazon.com/neurondevice`.

## When it does not fire
- Another name under a vendor's own domain (`gpu.intel.com/dxg`, Intel's GPU on WSL, two
  characters from `gpu.intel.com/xe`): the vendor's plugin may advertise it. Only a plural
  (`nvidia.com/gpus`) is a near miss there.
- The resource is one of those, or a MIG profile (`nvidia.com/mig-1g.10gb`: profiles differ
  from each other by a character and are all real), or a shared GPU resource a device
  plugin renames (`nvidia.com/gpu.shared`).
- Any other extended resource: a device plugin of your own names its resources as it likes.

## Why it matters
No node advertises the misspelled resource, so the pod stays Pending with `Insufficient
gaudi.habana.ai/gaudi` on every node; nothing in the manifest looks wrong to a reader.

## Example
```yaml
resources:
  limits: {gaudi.habana.ai/gaudi: 8}
```

## Fix
Use the name the device plugin advertises:
```yaml
resources:
  limits: {habana.ai/gaudi: 8}
```",
};

#[derive(Debug)]
pub struct Al019;

/// Accelerator resources device plugins advertise, with the vendor words a near miss of
/// the domain would still carry.
const KNOWN: &[(&str, &[&str])] = &[
    ("nvidia.com/gpu", &["nvidia"]),
    ("amd.com/gpu", &["amd"]),
    ("habana.ai/gaudi", &["habana", "gaudi"]),
    ("gpu.intel.com/i915", &["intel"]),
    ("gpu.intel.com/xe", &["intel"]),
    ("gpu.intel.com/dxg", &["intel"]),
    ("gpu.intel.com/millicores", &["intel"]),
    ("gpu.intel.com/memory.max", &["intel"]),
    ("gpu.intel.com/i915_monitoring", &["intel"]),
    ("gpu.intel.com/xe_monitoring", &["intel"]),
    ("google.com/tpu", &["google", "tpu"]),
    ("aws.amazon.com/neuron", &["amazon", "aws"]),
    ("aws.amazon.com/neuroncore", &["amazon", "aws"]),
    ("aws.amazon.com/neurondevice", &["amazon", "aws"]),
];

/// The known resource `resource` most likely stands for, if it is a near miss of one.
fn meant(resource: &str) -> Option<&'static str> {
    if KNOWN.iter().any(|(known, _)| *known == resource) || is_mig_or_shared(resource) {
        return None;
    }
    let (domain, name) = resource.split_once('/')?;
    // The vendor's name under a domain that still names the vendor.
    let wrong_domain = KNOWN.iter().find(|(known, vendor)| {
        known.split_once('/').is_some_and(|(_, n)| n == name)
            && vendor.iter().any(|v| domain.contains(v))
    });
    if let Some((known, _)) = wrong_domain {
        return Some(known);
    }
    // One or two characters off the whole name: a domain misspelled (`nvidia.con/gpu`), or
    // the name made plural (`nvidia.com/gpus`). Another name under the vendor's own domain
    // is the vendor's to add (Intel's `gpu.intel.com/dxg` on WSL): not a near miss.
    KNOWN
        .iter()
        .filter(|(known, vendor)| {
            let (known_domain, known_name) = known.split_once('/').unwrap_or_default();
            let plural = name.strip_suffix('s') == Some(known_name);
            edit_distance(known, resource) <= 2
                && ((domain != known_domain
                    && (vendor.iter().any(|v| domain.contains(v))
                        || edit_distance(domain, known_domain) <= 2))
                    || (domain == known_domain && plural))
        })
        .min_by_key(|(known, _)| edit_distance(known, resource))
        .map(|(known, _)| *known)
}

/// NVIDIA's MIG profiles and the shared replicas a device plugin may rename its GPUs to.
fn is_mig_or_shared(resource: &str) -> bool {
    resource.starts_with("nvidia.com/mig-")
        || resource.starts_with("nvidia.com/gpu.")
        || resource.starts_with("amd.com/gpu.")
}

impl Rule for Al019 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        for container in all_containers(spec) {
            let name = container
                .get("name")
                .and_then(Node::as_str)
                .unwrap_or("(unnamed)");
            // Once per resource and container: a limit repeats its request.
            let mut said: Vec<&str> = Vec::new();
            for field in ["requests", "limits"] {
                let entries = container
                    .path(&["resources", field])
                    .map(Node::entries)
                    .unwrap_or_default();
                for (key, _) in entries {
                    let Some(resource) = key.as_str() else {
                        continue;
                    };
                    let Some(known) = meant(resource) else {
                        continue;
                    };
                    if said.contains(&resource) {
                        continue;
                    }
                    said.push(resource);
                    out.push(
                        RawFinding::at(
                            key,
                            format!(
                                "container {name} {field} {resource}, which no device plugin advertises: the resource is {known}, so the pod stays Pending with Insufficient {resource} on every node"
                            ),
                        )
                        .with_fix(format!("{known}: (the same quantity)")),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::meant;

    #[test]
    fn near_misses_of_known_resources_and_nothing_else() {
        for (resource, want) in [
            ("gaudi.habana.ai/gaudi", Some("habana.ai/gaudi")),
            ("habana.com/gaudi", Some("habana.ai/gaudi")),
            ("nvidia/gpu", Some("nvidia.com/gpu")),
            ("nvidia.com/gpus", Some("nvidia.com/gpu")),
            ("nvidia.con/gpu", Some("nvidia.com/gpu")),
            ("amd.com/gpus", Some("amd.com/gpu")),
            ("intel.com/i915", Some("gpu.intel.com/i915")),
            ("google.com/tpus", Some("google.com/tpu")),
            // Intel's own resources, one of them two characters from another.
            ("gpu.intel.com/dxg", None),
            ("gpu.intel.com/millicores", None),
            ("gpu.intel.com/xe_monitoring", None),
            ("gpu.intel.com/fpga", None),
            ("nvidia.com/gpu", None),
            ("nvidia.com/mig-1g.10gb", None),
            ("nvidia.com/mig-2g.10gb", None),
            ("nvidia.com/gpu.shared", None),
            ("example.com/gpu", None),
            ("xilinx.com/fpga", None),
            ("aws.amazon.com/neuroncore", None),
            ("squat.ai/fuse", None),
            ("cpu", None),
            ("ephemeral-storage", None),
        ] {
            assert_eq!(meant(resource), want, "{resource}");
        }
    }
}
