// Package catalog reads catalogs of OperatorHub-format operator bundles from a directory
// and indexes their upgrade graphs. It has no Kubernetes client: the controllers and the
// CLI share it, and everything in it is a function of the files on disk.
//
// # Layouts
//
// Load detects the layout of each package directory below the catalog root:
//
//   - Package manifest: <package>/<name>.package.yaml (packageName, channels with
//     currentCSV, defaultChannel) plus one folder per version holding the CSV and CRDs (or
//     a manifests/ folder). Each channel is its currentCSV and the chain of CSVs it
//     replaces, plus the bundles that chain skips.
//   - Bundle: <package>/<version>/manifests/ and metadata/annotations.yaml (package,
//     channels, default channel), optionally metadata/dependencies.yaml. A channel is the
//     bundles whose annotations name it; its head is the entry no other entry replaces or
//     skips (as opm defines it).
//   - Flat, the original operator-manager layout: <package>/<version>/ folders with a CSV
//     and CRDs and no package file. There is one channel, FlatChannel ("stable"), ordered
//     by semver; a CSV that does not say what it replaces replaces the previous version.
//   - File-Based Catalog: olm.package, olm.channel and olm.bundle blobs in YAML or JSON
//     streams, in catalog.{yaml,json} or index.{yaml,json} (or any YAML/JSON file holding
//     olm.* schemas) in a package directory or at the root.
//
// A community-operators ci.yaml with "updateGraph: semver-mode" makes the bundle layout's
// channels follow version order like the flat layout.
//
// # Versions
//
// spec.version must be strict semver; a CSV whose spec.version is present but not semver
// ("v1.0", "1.0") is rejected with a precise reason. Only when spec.version is absent is
// the version read leniently from the version folder's name, then from the CSV name.
//
// # Errors
//
// Load fails only when the root cannot be read. A bad bundle, package file, channel or
// File-Based Catalog blob becomes a Rejection naming the file (and line or field) and is
// left out alone; everything else loads. Warnings record what loaded with a caveat.
//
// # Safety
//
// Every file is opened through an os.Root for the catalog directory, so no path, "../" or
// symlink reaches outside it. Symlinks are never followed at all, inside or outside the
// root: each is reported with its target. Every file is bounded by Options.MaxFileSize
// (DefaultMaxFileSize, 8 MiB). Names that become identifiers (packages, channels, CSVs)
// must not contain '/' or be "..".
//
// # Digests and memory
//
// The index holds metadata only. A bundle's Digest is sha256 over its files (see
// DigestFiles), which Catalog.Content and Catalog.Files check when they read the files
// back. A File-Based Catalog bundle's files are virtual: its blob as olm.bundle.json and
// each olm.bundle.object as objects/NNN.yaml. Catalog.Digest covers packages, channels,
// edges and bundle digests; LoadIfChanged compares a cheap fingerprint of paths, sizes and
// modification times and returns the previous catalog when it is unchanged.
//
// # Remote catalogs
//
// FromIndex builds a Catalog from the index of another one (its Digest, Packages and
// Bundles, as package remote serves them) with a function that returns a bundle's files:
// lookups are rebuilt and checked, and Files and Content go through the function with the
// same digest check as for a directory.
package catalog
