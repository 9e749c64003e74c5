package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/deploy/image"
)

// buildStatic builds cmd/hookrelay as `make image` does, into dir.
func buildStatic(t *testing.T, dir, version string) string {
	t.Helper()
	bin := filepath.Join(dir, "hookrelay")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, "./cmd/hookrelay")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build hookrelay:\n%s", out)
	return bin
}

// TestImageTarball builds the image from the real static binary, writes the
// tarball and reads it back the way `docker load` does: manifest.json, the
// config and the layer's files.
func TestImageTarball(t *testing.T) {
	dir := t.TempDir()
	bin := buildStatic(t, dir, "v9.9.9-test")
	img, err := image.Build(image.Options{Binary: bin, Version: "v9.9.9-test"})
	require.NoError(t, err)
	path := filepath.Join(dir, "hookrelay-image.tar")
	require.NoError(t, image.Write(path, "hookrelay:v9.9.9-test", img))

	// docker load reads manifest.json at the top of the tarball: one
	// image, its tag, its config and its one layer.
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	require.NoError(t, json.Unmarshal(tarEntry(t, path, "manifest.json"), &manifest))
	require.Len(t, manifest, 1)
	require.Equal(t, []string{"hookrelay:v9.9.9-test"}, manifest[0].RepoTags)
	require.Len(t, manifest[0].Layers, 1)

	tag, err := name.NewTag("hookrelay:v9.9.9-test")
	require.NoError(t, err)
	loaded, err := tarball.ImageFromPath(path, &tag)
	require.NoError(t, err)
	cf, err := loaded.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cf.OS)
	require.Equal(t, runtime.GOARCH, cf.Architecture)
	require.Equal(t, "65532:65532", cf.Config.User, "runs as the non-root user")
	require.Equal(t, []string{"/usr/local/bin/hookrelay"}, cf.Config.Entrypoint)
	require.Equal(t, []string{"serve"}, cf.Config.Cmd)
	require.Contains(t, cf.Config.Env, "HOOKRELAY_ADDR=0.0.0.0:8080")
	require.Contains(t, cf.Config.Env, "HOOKRELAY_DATA_DIR=/data")
	require.Contains(t, cf.Config.ExposedPorts, "8080/tcp")
	require.Equal(t, "v9.9.9-test", cf.Config.Labels["org.opencontainers.image.version"])

	files := layerFiles(t, loaded)
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		require.NotContains(t, files, sh, "no shell in the image")
	}
	binHdr := files["usr/local/bin/hookrelay"]
	require.NotNil(t, binHdr, "binary in the layer")
	require.Equal(t, int64(0o755), binHdr.Mode&0o777, "binary executable, not writable by its user")
	require.Equal(t, 0, binHdr.Uid)
	data := files["data"]
	require.NotNil(t, data, "data directory")
	require.Equal(t, image.UID, data.Uid, "data directory writable by the image's user")
	require.NotNil(t, files["etc/ssl/certs/ca-certificates.crt"])

	// The binary in the layer is the static one and runs as it is.
	extracted := filepath.Join(dir, "extracted-hookrelay")
	require.NoError(t, os.WriteFile(extracted, fileBody(t, loaded, "usr/local/bin/hookrelay"), 0o755))
	f, err := elf.Open(extracted)
	require.NoError(t, err)
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "statically linked: no program interpreter")
	}
	require.NoError(t, f.Close())
	out, err := exec.Command(extracted, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "hookrelay v9.9.9-test")

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(fileBody(t, loaded, "etc/ssl/certs/ca-certificates.crt")), "CA bundle parses")
}

// TestImageReproducible: the same inputs give the same digest, so a rebuild
// can be checked against a published image.
func TestImageReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hookrelay")
	require.NoError(t, os.WriteFile(bin, []byte("not really a binary"), 0o755))
	digest := func() v1.Hash {
		img, err := image.Build(image.Options{Binary: bin, Version: "x"})
		require.NoError(t, err)
		d, err := img.Digest()
		require.NoError(t, err)
		return d
	}
	require.Equal(t, digest(), digest())
}

func TestImageMissingBinary(t *testing.T) {
	_, err := image.Build(image.Options{Binary: filepath.Join(t.TempDir(), "missing")})
	require.ErrorIs(t, err, os.ErrNotExist)
}

// tarEntry returns the body of the named entry of the tarball at path.
func tarEntry(t *testing.T, path, entry string) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no %s", path, entry)
		}
		require.NoError(t, err)
		if h.Name == entry {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			return b
		}
	}
}

// layerFiles lists the image's file system, as a container would see it.
func layerFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		files[name] = h
	}
}

func fileBody(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no %s in the image", path)
		}
		require.NoError(t, err)
		if strings.TrimPrefix(h.Name, "./") == path {
			var b bytes.Buffer
			_, err := io.Copy(&b, tr)
			require.NoError(t, err)
			return b.Bytes()
		}
	}
}
