// Package servingcert generates and checks the serving certificates of
// operator webhooks.
//
// Every webhook Deployment operator-manager installs serves TLS for its
// Service DNS names. The API server only trusts it through the caBundle of
// the webhook configuration, so each installation gets its own CA, and the
// certificate and key reach the pod through a Secret. Bundles are reused for
// as long as they are valid, so that rendering is deterministic and pods do
// not roll on every reconcile, and are replaced well before they expire.
package servingcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Bundle is a CA and a serving certificate signed by it, all PEM.
// CA is what goes into the webhook configurations' caBundle; Cert and Key
// are what the webhook server presents.
type Bundle struct{ CA, Cert, Key []byte }

// Secret data keys: those of a kubernetes.io/tls Secret, which webhook
// servers and their libraries expect, plus the CA so that the caBundle can be
// rebuilt from the Secret alone.
const (
	KeyCA   = "ca.crt"
	KeyCert = "tls.crt"
	KeyKey  = "tls.key"
)

// DefaultValidity is how long generated certificates are valid. Two years, as
// OLM does: long enough that rotation (and the pod roll it causes) is rare,
// short enough that a leaked key does not stay useful forever.
const DefaultValidity = 2 * 365 * 24 * time.Hour

// clockSkew backdates certificates so that nodes whose clocks lag a little
// behind ours accept them right away.
const clockSkew = time.Hour

// DNSNames are the names a Service's serving certificate must hold: the API
// server calls webhooks at <svc>.<ns>.svc, and in-cluster clients may use the
// longer or shorter forms. The first name is the one used as CommonName.
func DNSNames(service, namespace string) []string {
	return []string{
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
		service + "." + namespace,
		service,
	}
}

// Generate makes a new self-signed CA and a serving certificate for dnsNames
// signed by it, both ECDSA P-256 and valid from now-1h (clock skew) to
// now+validity. A fresh CA per bundle means rotating a serving certificate
// never needs another installation's key.
func Generate(dnsNames []string, now time.Time, validity time.Duration) (Bundle, error) {
	if len(dnsNames) == 0 {
		return Bundle{}, errors.New("servingcert: no DNS names")
	}
	if validity <= 0 {
		return Bundle{}, fmt.Errorf("servingcert: validity %v is not positive", validity)
	}
	notBefore, notAfter := now.Add(-clockSkew), now.Add(validity)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, fmt.Errorf("servingcert: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "operator-manager webhook CA for " + dnsNames[0]},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := sign(caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("servingcert: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Bundle{}, fmt.Errorf("servingcert: CA: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, fmt.Errorf("servingcert: key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              append([]string(nil), dnsNames...),
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	certDER, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("servingcert: certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Bundle{}, fmt.Errorf("servingcert: key: %w", err)
	}
	return Bundle{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// sign gives tmpl a random 128-bit serial number, so certificates from
// different installations never collide, and signs it with parent's key.
func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
}

// Check says whether b can keep serving dnsNames at now: "" when it can,
// else why not, in words a person reading an event or condition can act on.
// Rotation is due once less than a fifth of the serving certificate's (or
// the CA's) validity remains, leaving time for the new one to roll out.
func Check(b Bundle, dnsNames []string, now time.Time) string {
	switch {
	case len(b.Cert) == 0:
		return "no certificate"
	case len(b.Key) == 0:
		return "no key"
	case len(b.CA) == 0:
		return "no CA certificate"
	}
	cert, err := parseCert(b.Cert)
	if err != nil {
		return "certificate does not parse: " + err.Error()
	}
	ca, err := parseCert(b.CA)
	if err != nil {
		return "CA certificate does not parse: " + err.Error()
	}
	key, err := parseKey(b.Key)
	if err != nil {
		return "key does not parse: " + err.Error()
	}
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return "key does not match the certificate"
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return "not signed by the CA: " + err.Error()
	}
	for _, name := range dnsNames {
		if err := cert.VerifyHostname(name); err != nil {
			return "does not cover " + name
		}
	}
	if why := checkTime(cert, now); why != "" {
		return why
	}
	if why := checkTime(ca, now); why != "" {
		return "CA " + why
	}
	return ""
}

func checkTime(c *x509.Certificate, now time.Time) string {
	switch {
	case now.Before(c.NotBefore):
		return "not valid until " + c.NotBefore.UTC().Format(time.RFC3339)
	case !now.Before(c.NotAfter):
		return "expired at " + c.NotAfter.UTC().Format(time.RFC3339)
	case c.NotAfter.Sub(now) < c.NotAfter.Sub(c.NotBefore)/5:
		return "expires at " + c.NotAfter.UTC().Format(time.RFC3339) + ", within the last fifth of its validity"
	}
	return ""
}

func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("PEM block is %q, not CERTIFICATE", block.Type)
	}
	return x509.ParseCertificate(block.Bytes)
}

// parseKey accepts the PKCS#8 keys Generate writes and the SEC 1 and PKCS#1
// keys people tend to put in Secrets by hand.
func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("PEM block %q is not a PKCS#8, EC or PKCS#1 private key", block.Type)
}

// FromSecretData reads a bundle from a Secret's data; missing keys give
// empty fields, which Check reports.
func FromSecretData(data map[string][]byte) Bundle {
	return Bundle{CA: data[KeyCA], Cert: data[KeyCert], Key: data[KeyKey]}
}

// SecretData is the data of the Secret that mounts b into the webhook pod.
func (b Bundle) SecretData() map[string][]byte {
	return map[string][]byte{KeyCA: b.CA, KeyCert: b.Cert, KeyKey: b.Key}
}

// Ensure returns existing when Check passes, so that a reconcile renders the
// same Secret and caBundle as before; otherwise a newly generated bundle,
// with rotated=true and the reason the old one could not be kept.
func Ensure(existing Bundle, dnsNames []string, now time.Time) (b Bundle, rotated bool, reason string, err error) {
	reason = Check(existing, dnsNames, now)
	if reason == "" {
		return existing, false, "", nil
	}
	b, err = Generate(dnsNames, now, DefaultValidity)
	if err != nil {
		return Bundle{}, false, reason, err
	}
	return b, true, reason, nil
}

// Hash is a short stable digest of the CA and certificate, used as a pod
// template annotation so that a rotation rolls the pods (which would
// otherwise keep serving the old certificate) and nothing else does.
func (b Bundle) Hash() string {
	h := sha256.New()
	h.Write(b.CA)
	h.Write([]byte{0}) // PEM never holds a NUL, so CA and Cert cannot run together
	h.Write(b.Cert)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// RenewAt is when b's rotation falls due: once less than a fifth of the serving
// certificate's or the CA's validity remains, whichever comes first. A bundle that does
// not parse is due now (the zero time).
func RenewAt(b Bundle) time.Time {
	var at time.Time
	for _, data := range [][]byte{b.Cert, b.CA} {
		c, err := parseCert(data)
		if err != nil {
			return time.Time{}
		}
		due := c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 5)
		if at.IsZero() || due.Before(at) {
			at = due
		}
	}
	return at
}
