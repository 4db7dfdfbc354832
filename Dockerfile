# rwc in a container: docker build -t rwc . ; then, in a repository of specs,
#   docker run --rm -v "$PWD:/repo" -w /repo -e RWC_DATABASE_URL rwc apply pipelines
# The build stage compiles rwc with cgo (pg_query_go's C parser) against
# musl and links it statically, as the release's linux binaries are
# (.goreleaser.yaml); the image is that one file on Alpine (a shell, for CI
# systems that run steps inside it, and the CA certificates for sslmode
# verify-full). It has no PostgreSQL: rwc local does not work in it.
FROM golang:1.26-alpine AS build
RUN apk add --no-cache build-base
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=""
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo,timetzdata \
      -ldflags "-s -w -linkmode external -extldflags -static -X github.com/rwc-dev/rwc/internal/version.release=${VERSION}" \
      -o /out/rwc ./cmd/rwc \
    && /out/rwc --version

FROM alpine:3.22
RUN apk add --no-cache ca-certificates \
    && adduser -D -u 10001 rwc
COPY --from=build /out/rwc /usr/local/bin/rwc
USER rwc
ENTRYPOINT ["rwc"]
CMD ["--help"]
