// Command gpu-device-plugin advertises fake NVIDIA GPUs to the real node's kubelet through the
// device-plugin API (v1beta1), as NVIDIA's plugin does for real ones.
//
// It serves DevicePlugin on a Unix socket in the kubelet's device-plugin directory and
// registers it on kubelet.sock for the resource nvidia.com/gpu. ListAndWatch sends -count
// healthy devices (gpu-0 ... gpu-N-1) once and then holds the stream open; Allocate hands each
// container the devices the kubelet chose for it as NVIDIA_VISIBLE_DEVICES (comma-separated,
// in the kubelet's order), which is all the container learns of its GPUs. The kubelet
// accounts for devices itself: two containers never get the same device.
//
// A kubelet that restarts deletes every socket in the directory: when the plugin's socket is
// gone it serves and registers again. It prints "registered" on stdout once registered, and
// one "allocate <ids>" line per Allocate.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const resource = "nvidia.com/gpu"

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done() // the devices never change: hold the stream until the kubelet goes
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	reply := &pluginapi.AllocateResponse{}
	for _, container := range req.ContainerRequests {
		ids := strings.Join(container.DevicesIds, ",")
		fmt.Printf("allocate %s\n", ids)
		reply.ContainerResponses = append(reply.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": ids},
		})
	}
	return reply, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// serve listens on the plugin's socket and registers it with the kubelet.
func serve(p *plugin, dir, name string) (*grpc.Server, error) {
	socket := filepath.Join(dir, name)
	_ = os.Remove(socket)
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	server := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(server, p)
	go func() { _ = server.Serve(listener) }()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		server.Stop()
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     name,
		ResourceName: resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		server.Stop()
		return nil, err
	}
	fmt.Println("registered")
	return server, nil
}

func main() {
	count := flag.Int("count", 8, "how many fake GPUs to advertise")
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin directory")
	name := flag.String("socket", "starburst-gpu.sock", "this plugin's socket name in -dir")
	flag.Parse()
	p := &plugin{}
	for i := 0; i < *count; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("gpu-%d", i), Health: pluginapi.Healthy})
	}
	var server *grpc.Server
	for {
		if _, err := os.Stat(filepath.Join(*dir, *name)); server == nil || err != nil {
			if server != nil {
				server.Stop()
			}
			var failed error
			if server, failed = serve(p, *dir, *name); failed != nil {
				fmt.Fprintf(os.Stderr, "registering: %v\n", failed)
			}
		}
		time.Sleep(time.Second)
	}
}
