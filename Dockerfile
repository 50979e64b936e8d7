# The huitian binary (serve, kube, topo, …) in a small image. Not built or
# tested in this repository's CI (no container runtime there): keep it simple.
# The solver links COIN-OR CLP through cgo, so the runtime image needs libClp.
FROM golang:1.26-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends coinor-libclp-dev pkg-config g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags "-s -w" -o /out/huitian ./cmd/huitian

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends coinor-libclp1 ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/huitian /usr/local/bin/huitian
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/huitian"]
