package servingcert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func generate(t *testing.T, names []string) Bundle {
	t.Helper()
	b, err := Generate(names, now, DefaultValidity)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return b
}

func servingCert(t *testing.T, b Bundle) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b.Cert)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// at returns the instant the given fraction of c's validity has elapsed.
func at(c *x509.Certificate, fraction float64) time.Time {
	return c.NotBefore.Add(time.Duration(fraction * float64(c.NotAfter.Sub(c.NotBefore))))
}

func TestDNSNames(t *testing.T) {
	got := strings.Join(DNSNames("webhook", "ops"), ",")
	want := "webhook.ops.svc,webhook.ops.svc.cluster.local,webhook.ops,webhook"
	if got != want {
		t.Errorf("DNSNames = %s, want %s", got, want)
	}
}

func TestCheckOverLifetime(t *testing.T) {
	names := DNSNames("webhook", "ops")
	b := generate(t, names)
	c := servingCert(t, b)
	if c.Subject.CommonName != names[0] {
		t.Errorf("CommonName = %q, want %q", c.Subject.CommonName, names[0])
	}
	tests := []struct {
		name string
		now  time.Time
		want string // substring of the reason; "" means Check passes
	}{
		{"just generated", now, ""},
		{"79% of validity", at(c, 0.79), ""},
		{"81% of validity", at(c, 0.81), "within the last fifth of its validity"},
		{"one day before expiry", c.NotAfter.Add(-24 * time.Hour), "within the last fifth of its validity"},
		{"after expiry", c.NotAfter.Add(time.Second), "expired at"},
		{"skewed clock, 30m behind", now.Add(-30 * time.Minute), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(b, names, tt.now)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckRejects(t *testing.T) {
	names := DNSNames("webhook", "ops")
	a, b := generate(t, names), generate(t, names)
	tests := []struct {
		name   string
		bundle Bundle
		names  []string
		want   string
	}{
		{"name not covered", a, append(names, "other.ops.svc"), "does not cover other.ops.svc"},
		{"empty bundle", Bundle{}, names, "no certificate"},
		{"garbage certificate", Bundle{CA: a.CA, Cert: []byte("not pem"), Key: a.Key}, names, "certificate does not parse"},
		{"garbage CA", Bundle{CA: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), Cert: a.Cert, Key: a.Key}, names, "CA certificate does not parse"},
		{"key of another bundle", Bundle{CA: a.CA, Cert: a.Cert, Key: b.Key}, names, "key does not match"},
		{"CA of another bundle", Bundle{CA: b.CA, Cert: a.Cert, Key: a.Key}, names, "not signed by the CA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.bundle, tt.names, now)
			if got == "" || !strings.Contains(got, tt.want) {
				t.Errorf("Check = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

func TestEnsure(t *testing.T) {
	names := DNSNames("webhook", "ops")
	valid := generate(t, names)

	got, rotated, reason, err := Ensure(valid, names, now.Add(24*time.Hour))
	if err != nil || rotated || reason != "" {
		t.Fatalf("Ensure(valid) = rotated %v, reason %q, err %v", rotated, reason, err)
	}
	if !bytes.Equal(got.CA, valid.CA) || !bytes.Equal(got.Cert, valid.Cert) || !bytes.Equal(got.Key, valid.Key) {
		t.Error("Ensure(valid) did not return the existing bundle byte for byte")
	}
	if got.Hash() != valid.Hash() {
		t.Error("Hash of a reused bundle changed")
	}

	for name, existing := range map[string]Bundle{
		"empty":         {},
		"other service": generate(t, DNSNames("other", "ops")),
		"about to expire": func() Bundle {
			b, err := Generate(names, now.Add(-100*24*time.Hour), 100*24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			got, rotated, reason, err := Ensure(existing, names, now)
			if err != nil || !rotated || reason == "" {
				t.Fatalf("Ensure = rotated %v, reason %q, err %v; want a rotation with a reason", rotated, reason, err)
			}
			if why := Check(got, names, now); why != "" {
				t.Errorf("rotated bundle fails Check: %s", why)
			}
			if got.Hash() == existing.Hash() {
				t.Error("Hash did not change on rotation, pods would not roll")
			}
		})
	}
}

func TestTLSHandshake(t *testing.T) {
	b := generate(t, DNSNames("webhook", "ops"))
	pair, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		t.Fatalf("X509KeyPair: %v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.CA) {
		t.Fatal("CA PEM not accepted by the cert pool")
	}
	dial := func(serverName string) error {
		d := &net.Dialer{Timeout: 5 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, ServerName: serverName})
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := dial("webhook.ops.svc"); err != nil {
		t.Errorf("handshake as webhook.ops.svc: %v", err)
	}
	if err := dial("other.example"); err == nil || !strings.Contains(err.Error(), "not other.example") {
		t.Errorf("handshake as other.example: err %v, want a certificate name error", err)
	}
}

func TestSecretDataRoundTrip(t *testing.T) {
	b := generate(t, DNSNames("webhook", "ops"))
	data := b.SecretData()
	for _, k := range []string{KeyCA, KeyCert, KeyKey} {
		if len(data[k]) == 0 {
			t.Errorf("SecretData has no %s", k)
		}
	}
	got := FromSecretData(data)
	if !bytes.Equal(got.CA, b.CA) || !bytes.Equal(got.Cert, b.Cert) || !bytes.Equal(got.Key, b.Key) {
		t.Error("FromSecretData(SecretData()) differs from the original bundle")
	}
	if got := FromSecretData(nil); Check(got, nil, now) != "no certificate" {
		t.Errorf("FromSecretData(nil) checks as %q, want \"no certificate\"", Check(got, nil, now))
	}
}

// TestRenewAt: the rotation falls due when Check starts saying so, so a reconcile
// scheduled then rotates the certificate.
func TestRenewAt(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	names := DNSNames("webhook", "ops")
	b, err := Generate(names, now, DefaultValidity)
	if err != nil {
		t.Fatal(err)
	}
	at := RenewAt(b)
	if at.Before(now.Add(DefaultValidity/2)) || !at.Before(now.Add(DefaultValidity)) {
		t.Fatalf("RenewAt = %v for a certificate valid from %v for %v", at, now, DefaultValidity)
	}
	if why := Check(b, names, at.Add(-time.Minute)); why != "" {
		t.Errorf("a minute before RenewAt, Check says %q", why)
	}
	if why := Check(b, names, at.Add(time.Minute)); why == "" {
		t.Error("a minute after RenewAt, Check still passes")
	}
	if !RenewAt(Bundle{}).IsZero() {
		t.Error("an empty bundle is not due at once")
	}
}
