package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/exitgate/exitgate/ca"
)

func newCACmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "The local CA with which serve intercepts HTTPS: init, export, path",
		Long: `exitgate serve intercepts HTTPS with a certificate authority of its own, made on
this machine on first use: ca.pem (the certificate, to give to clients) and
ca-key.pem (its private key, mode 0600, never exported) in --ca-dir. No
library's built-in CA is used: its key would be public.`,
	}
	cmd.AddCommand(newCAInitCmd(), newCAExportCmd(), newCAPathCmd())
	return group(cmd)
}

// caDirFlag adds --ca-dir to cmd.
func caDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "ca-dir", "", "`DIR`ectory of the CA; default $"+serveCADirEnv+" (serve's), else $XDG_CONFIG_HOME/exitgate/ca or ~/.config/exitgate/ca")
	setDefaultText(cmd.Flags(), "ca-dir", "~/.config/exitgate/ca")
	cmd.Flags().SetAnnotation("ca-dir", alsoReadsAnnotation, []string{serveCADirEnv})
}

// serveCADirEnv is the variable of serve's --ca-dir. The ca commands read
// it too: a user who set serve's CA directory in the environment was given
// the default path by `curl --cacert "$(exitgate ca path)"`, not serve's.
const serveCADirEnv = envPrefix + "SERVE_CA_DIR"

// caDirOrDefault is dir, else serve's CA directory from the environment,
// else the default.
func caDirOrDefault(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if d := os.Getenv(serveCADirEnv); d != "" {
		return d, nil
	}
	return ca.DefaultDir()
}

func newCAInitCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Make the CA if there is none (serve does too), and print its certificate's path",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := caDirOrDefault(dir)
			if err != nil {
				return err
			}
			c, created, err := ca.Init(d)
			if err != nil {
				return err
			}
			if created {
				fmt.Fprintf(cmd.ErrOrStderr(), "exitgate: made a CA: %s (key %s, mode 0600)\n", c.CertPath(), filepath.Join(d, ca.KeyFile))
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "exitgate: the CA exists: %s\n", c.CertPath())
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), c.CertPath())
			return err
		},
	}
	caDirFlag(cmd, &dir)
	return cmd
}

func newCAExportCmd() *cobra.Command {
	var dir, out string
	var der bool
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Print the CA certificate (PEM, or DER with --der) for clients to trust; never the key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCA(dir)
			if err != nil {
				return err
			}
			data := c.PEM()
			if der {
				data = c.DER()
			}
			if out != "" {
				return os.WriteFile(out, data, 0o644)
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	caDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&der, "der", false, "DER instead of PEM (Windows and Android import it)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to `FILE` instead of stdout")
	return cmd
}

func newCAPathCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "path",
		Short: "Print the path of the CA certificate (curl --cacert \"$(exitgate ca path)\")",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCA(dir)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), c.CertPath())
			return err
		},
	}
	caDirFlag(cmd, &dir)
	return cmd
}

// loadCA loads the CA in dir (or the default), saying how to make one when
// there is none.
func loadCA(dir string) (*ca.CA, error) {
	d, err := caDirOrDefault(dir)
	if err != nil {
		return nil, err
	}
	c, err := ca.Load(d)
	if errors.Is(err, ca.ErrNoCA) {
		return nil, fmt.Errorf("no CA in %s yet: run exitgate ca init (or exitgate serve, which makes it)", d)
	}
	return c, err
}
