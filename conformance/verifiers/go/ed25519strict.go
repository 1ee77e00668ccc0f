package main

import (
	"bytes"
	"crypto/ed25519"

	"filippo.io/edwards25519"
)

// Strict Ed25519 verification.
//
// crypto/ed25519.Verify is RFC 8032 verification with the cofactorless equation
// R == [S]B - [k]A. It refuses S >= L and, because it compares the encoding of the computed R
// with the received bytes, any R that is not a canonical encoding. It does NOT refuse:
//
//   - a public key A of small order (the identity, or any of the 8 torsion points): with
//     A = identity, R = identity and S = 0 the equation holds for every message;
//   - an R of small order (with an honest key, R = identity and S = k*a verifies);
//   - a non-canonical encoding of A (y >= p, or x = 0 with the sign bit set): A is decoded
//     with filippo.io/edwards25519's Point.SetBytes, which accepts them, and hashed as received;
//   - a mixed-order A or R (a point with a torsion component), whenever the torsion parts
//     cancel in the equation (1 in 8 messages for a key with an order-8 component).
//
// ed25519-dalek's verify_strict (the Rust side of this project) refuses S >= L, non-canonical
// R, and small-order A and R, but accepts non-canonical A of large order and mixed-order A and
// R when the cofactorless equation holds. Verifiers that use the cofactored equation
// ([8]R == [8]([S]B - [k]A), e.g. @noble/curves, ZIP-215) accept an honest signature whose R
// has a small-order point added.
//
// This verifier closes all of these: every point must be canonically encoded, of large order
// and torsion-free (in the prime-order subgroup), and S < L. For such inputs the cofactored and
// cofactorless equations agree, so every strict verifier gives the same answer; an honest
// signer (A = [a]B, R = [r]B) always passes. Each rule has a vector in
// stream-window-signed-negative-extra-vectors.json.

// The strictness rules, in the order they are applied (the first that fails is reported).
const (
	ruleSNonCanonical = "s_non_canonical" // S >= L
	ruleRInvalid      = "r_invalid"       // R does not decode to a curve point
	ruleRNonCanonical = "r_non_canonical" // R decodes but is not the canonical encoding
	ruleRSmallOrder   = "r_small_order"   // [8]R is the identity
	ruleRMixedOrder   = "r_mixed_order"   // [L]R is not the identity (R has a torsion component)
	ruleAInvalid      = "a_invalid"
	ruleANonCanonical = "a_non_canonical"
	ruleASmallOrder   = "a_small_order"
	ruleAMixedOrder   = "a_mixed_order"
	ruleEquation      = "equation" // crypto/ed25519.Verify refuses
)

// strictRules lists every rule, for the tests that delete one at a time.
var strictRules = []string{
	ruleSNonCanonical, ruleRInvalid, ruleRNonCanonical, ruleRSmallOrder, ruleRMixedOrder,
	ruleAInvalid, ruleANonCanonical, ruleASmallOrder, ruleAMixedOrder, ruleEquation,
}

// disabledRule lets a test delete one rule and watch its vector get through.
var disabledRule string

// lMinusOne is L - 1 as a canonical scalar; [L]P is computed as [L-1]P + P.
var lMinusOne = func() *edwards25519.Scalar {
	one := make([]byte, 32)
	one[0] = 1
	s, _ := edwards25519.NewScalar().SetCanonicalBytes(one)
	return edwards25519.NewScalar().Negate(s) // -1 mod L = L - 1
}()

// StrictError names the rule that refused a signature.
type StrictError struct{ Rule string }

func (e *StrictError) Error() string { return "Ed25519 strict: " + e.Rule }

// checkPoint applies the canonical, small-order and torsion-free rules to one encoded point.
func checkPoint(enc []byte, invalid, nonCanonical, smallOrder, mixedOrder string) error {
	p, err := new(edwards25519.Point).SetBytes(enc)
	if err != nil {
		if disabledRule == invalid {
			return nil
		}
		return &StrictError{invalid}
	}
	if disabledRule != nonCanonical && !bytes.Equal(p.Bytes(), enc) {
		return &StrictError{nonCanonical}
	}
	identity := edwards25519.NewIdentityPoint()
	if disabledRule != smallOrder && new(edwards25519.Point).MultByCofactor(p).Equal(identity) == 1 {
		return &StrictError{smallOrder}
	}
	lp := new(edwards25519.Point).ScalarMult(lMinusOne, p)
	lp.Add(lp, p)
	if disabledRule != mixedOrder && lp.Equal(identity) != 1 {
		return &StrictError{mixedOrder}
	}
	return nil
}

// ed25519VerifyStrict verifies sig over msg with pub under the strict rules above, then with
// crypto/ed25519.Verify (the cofactorless RFC 8032 equation).
func ed25519VerifyStrict(pub, msg, sig []byte) error {
	if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return refuse("signature", "public key %d bytes, signature %d bytes", len(pub), len(sig))
	}
	if _, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:]); err != nil && disabledRule != ruleSNonCanonical {
		return refuse("signature", "%v", &StrictError{ruleSNonCanonical})
	}
	if err := checkPoint(sig[:32], ruleRInvalid, ruleRNonCanonical, ruleRSmallOrder, ruleRMixedOrder); err != nil {
		return refuse("signature", "%v", err)
	}
	if err := checkPoint(pub, ruleAInvalid, ruleANonCanonical, ruleASmallOrder, ruleAMixedOrder); err != nil {
		return refuse("signature", "%v", err)
	}
	if disabledRule != ruleEquation && !ed25519.Verify(ed25519.PublicKey(pub), msg, sig) {
		return refuse("signature", "%v", &StrictError{ruleEquation})
	}
	return nil
}
