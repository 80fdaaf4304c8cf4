// Command etcd runs a single-member, test-only etcd (go.etcd.io/etcd/server/v3/embed,
// the version kube-apiserver of the pinned release depends on).
//
// It listens for clients on --listen-client-url (port 0 picks a free port) and, once
// ready, prints one line "ready <client-url>" on stdout, so that its caller learns the
// port without racing for it. fsync is off: the data is a test's, not anyone's.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func mustURL(raw string) url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		log.Fatalf("bad url %q: %v", raw, err)
	}
	return *u
}

func main() {
	dataDir := flag.String("data-dir", "", "directory for etcd's data (required)")
	clientURL := flag.String("listen-client-url", "http://127.0.0.1:0", "client URL")
	peerURL := flag.String("listen-peer-url", "http://127.0.0.1:0", "peer URL")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("--data-dir is required")
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	cfg.ListenClientUrls = []url.URL{mustURL(*clientURL)}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	cfg.ListenPeerUrls = []url.URL{mustURL(*peerURL)}
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	server, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd did not start: %v", err)
	}
	defer server.Close()
	select {
	case <-server.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		log.Fatal("etcd was not ready within 60s")
	}
	fmt.Printf("ready http://%s\n", server.Clients[0].Addr().String())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-signals:
	case err := <-server.Err():
		log.Fatalf("etcd failed: %v", err)
	}
}
