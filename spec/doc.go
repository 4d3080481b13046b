// Package spec is cordon's sandbox model: the YAML config, its strict
// validation, the built-in profiles, the derivation of child-worker sandboxes
// (which can only narrow) and the translation of a sandbox to an OCI runtime
// spec. It depends only on runtime-spec, yaml.v3 and the standard library, so
// it builds and tests on every OS.
package spec
