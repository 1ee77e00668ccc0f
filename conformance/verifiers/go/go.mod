module jouleclaw.dev/conformance/verifiers/go

go 1.26.8

require (
	filippo.io/edwards25519 v1.2.0
	filippo.io/torchwood v0.6.1
	github.com/fxamacker/cbor/v2 v2.10.0
	github.com/gowebpki/jcs v1.0.2
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2
	github.com/veraison/go-cose v1.3.0
	golang.org/x/mod v0.24.0
	lukechampine.com/blake3 v1.4.1
)

require (
	github.com/klauspost/cpuid/v2 v2.0.9 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/crypto v0.38.0 // indirect
	golang.org/x/sync v0.14.0 // indirect
	golang.org/x/text v0.25.0 // indirect
)
