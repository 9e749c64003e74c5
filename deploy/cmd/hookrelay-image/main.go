// Command hookrelay-image writes hookrelay's container image as a tarball
// that `docker load` reads, from a static binary built beforehand
// (`make image` does both). It needs no network, daemon or base image.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay/deploy/image"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "hookrelay-image: %v\n", err)
		os.Exit(1)
	}
}

func run(_ context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("hookrelay-image", flag.ContinueOnError)
	binary := fs.String("binary", "", "statically linked hookrelay binary (CGO_ENABLED=0)")
	out := fs.String("out", "hookrelay-image.tar", "tarball to write")
	version := fs.String("version", "dev", "image version label and tag")
	repo := fs.String("repo", "hookrelay", "repository of the tag (hookrelay:<version>)")
	ca := fs.String("ca", image.DefaultCAFile, "PEM CA bundle for HTTPS deliveries")
	arch := fs.String("arch", "", "GOARCH of the binary (default this machine's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" {
		return fmt.Errorf("-binary is required")
	}
	// SOURCE_DATE_EPOCH, the reproducible-builds convention, stamps the
	// image; without it the epoch does, and the digest depends on the
	// inputs alone.
	var created time.Time
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		created = time.Unix(sec, 0)
	}
	img, err := image.Build(image.Options{Binary: *binary, CAFile: *ca, Version: *version, Created: created, Arch: *arch})
	if err != nil {
		return err
	}
	tag := *repo + ":" + *version
	if err := image.Write(*out, tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s, %s); load it with: docker load -i %s\n", *out, tag, digest, *out)
	return nil
}
