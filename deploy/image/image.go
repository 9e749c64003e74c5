// Package image builds hookrelay's container image from a static binary,
// without a registry, a base image or a network: one layer holds the binary,
// the CA bundle for HTTPS deliveries and the writable data directory, and
// the config runs the binary as an unprivileged user with no shell beside it.
package image

import (
	"archive/tar"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Paths and identity inside the image. The user is the one distroless
// images call "nonroot"; there is no /etc/passwd, so it is given by number.
const (
	BinaryPath = "/usr/local/bin/hookrelay"
	CAPath     = "/etc/ssl/certs/ca-certificates.crt"
	DataDir    = "/data"
	UID        = 65532
	Port       = "8080"
)

// DefaultCAFile is the machine's CA bundle (Debian's ca-certificates) that
// goes into the image when Options.CAFile is empty.
const DefaultCAFile = "/etc/ssl/certs/ca-certificates.crt"

// Options says what goes into the image.
type Options struct {
	// Binary is the path of a statically linked hookrelay (CGO_ENABLED=0).
	Binary string
	// CAFile is the PEM bundle installed at CAPath. Default DefaultCAFile.
	CAFile string
	// Version labels the image (org.opencontainers.image.version).
	Version string
	// Created stamps the image and every file in it; the zero time means the
	// Unix epoch, so that the same inputs always give the same digest.
	Created time.Time
	// Arch is the GOARCH the binary was built for. Default runtime.GOARCH.
	Arch string
}

// WithDefaults returns o with every empty field that has a default set.
func (o Options) WithDefaults() Options {
	o.CAFile = cmp.Or(o.CAFile, DefaultCAFile)
	o.Version = cmp.Or(o.Version, "dev")
	o.Arch = cmp.Or(o.Arch, runtime.GOARCH)
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0)
	}
	o.Created = o.Created.UTC()
	return o
}

// Build returns the image: an empty base, one layer, and a config that runs
// `hookrelay serve` as UID:UID listening on all interfaces on Port.
func Build(o Options) (v1.Image, error) {
	o = o.WithDefaults()
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	ca, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read CA bundle: %w", err)
	}
	layerTar, err := rootfs(bin, ca, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.Arch, "linux"
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, UID),
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"serve"},
		WorkingDir: DataDir,
		// The binary's own defaults listen on loopback and keep state in
		// ./data: right on a workstation, useless in a container.
		Env: []string{
			"PATH=/usr/local/bin",
			"HOOKRELAY_ADDR=0.0.0.0:" + Port,
			"HOOKRELAY_DATA_DIR=" + DataDir,
			"HOOKRELAY_LOG_FORMAT=json",
		},
		ExposedPorts: map[string]struct{}{Port + "/tcp": {}},
		// A volume keeps the embedded S3 store writable (and out of the
		// container's layer) under `docker run --read-only`.
		Volumes: map[string]struct{}{DataDir: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "hookrelay",
			"org.opencontainers.image.description": "Webhook dispatch platform on PostgreSQL",
			"org.opencontainers.image.version":     o.Version,
		},
	}
	cf.History = []v1.History{{Created: cf.Created, CreatedBy: "hookrelay deploy/image: static binary, CA bundle, " + DataDir}}
	return mutate.ConfigFile(img, cf)
}

// Write saves img as a tarball that `docker load` (and podman, skopeo,
// crane) reads, tagged with tag such as "hookrelay:1.2.3".
func Write(path, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag, name.WithDefaultRegistry(""))
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	return tarball.WriteToFile(path, ref, img)
}

// rootfs is the layer's tar: directories first, each owned by root except
// the data directory, which belongs to the image's user.
func rootfs(bin, ca []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	type entry struct {
		name string
		mode int64
		uid  int
		body []byte
		dir  bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: CAPath[1:], mode: 0o644, body: ca},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: BinaryPath[1:], mode: 0o755, body: bin},
		{name: DataDir[1:] + "/", mode: 0o700, uid: UID, dir: true},
		// Go's os.TempDir for anything that asks; mount a tmpfs over it
		// under a read-only root.
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
