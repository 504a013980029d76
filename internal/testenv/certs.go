package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the small set of keys a local control plane needs: one CA that signs the API
// server's serving certificate and an admin client certificate (group system:masters), and
// the service-account signing key pair.
type pki struct {
	CAFile, ServingCert, ServingKey, AdminCert, AdminKey, SAKey, SAPub string
	caPEM, adminCertPEM, adminKeyPEM                                   []byte
}

func writePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		CAFile: filepath.Join(dir, "ca.crt"), ServingCert: filepath.Join(dir, "apiserver.crt"),
		ServingKey: filepath.Join(dir, "apiserver.key"), AdminCert: filepath.Join(dir, "admin.crt"),
		AdminKey: filepath.Join(dir, "admin.key"), SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "operator-manager-local-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p.caPEM = pemBlock("CERTIFICATE", caDER)

	issue := func(serial int64, cn string, org []string, usage x509.ExtKeyUsage, ips []net.IP, dns []string) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: org},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: ips, DNSNames: dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
	}
	servingCert, servingKey, err := issue(2, "kube-apiserver", nil, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"})
	if err != nil {
		return nil, err
	}
	p.adminCertPEM, p.adminKeyPEM, err = issue(3, "operator-manager-admin", []string{"system:masters"}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	// Service-account tokens are signed with RSA, which every consumer accepts.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	for path, data := range map[string][]byte{
		p.CAFile: p.caPEM, p.ServingCert: servingCert, p.ServingKey: servingKey,
		p.AdminCert: p.adminCertPEM, p.AdminKey: p.adminKeyPEM,
		p.SAKey: pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)), p.SAPub: pemBlock("PUBLIC KEY", saPub),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return p, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
