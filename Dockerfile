#
# swapd's image (docs/deploy.md): `swapd` and `swapctl` on a minimal glibc base, as a non-root
# user, with /data for the embedded SQLite default. Every setting comes from the environment
# (SWAPD_*, docs/configuration.md).
#
#   docker build -t swapd .
#   docker run -p 8080:8080 -v swapd-data:/data swapd
#
# Both base images are build arguments. BINARIES=prebuilt takes the binaries from
# deploy/.bin/ instead of building them (the tests build with cargo on the host, and assemble
# their runtime base locally: deploy/local-base.sh).

ARG BUILD_IMAGE=docker.io/library/rust:1.95-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot
ARG BINARIES=build

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p swapd -p swapctl \
    && mkdir -p /out/bin /out/data \
    && cp target/release/swapd target/release/swapctl /out/bin/

FROM scratch AS prebuilt
COPY deploy/.bin/ /out/

FROM ${BINARIES} AS binaries

FROM ${RUNTIME_IMAGE}
COPY --from=binaries /out/bin/ /usr/local/bin/
COPY --from=binaries --chown=65532:65532 /out/data/ /data/
USER 65532:65532
WORKDIR /data
VOLUME /data
ENV SWAPD_DATA_DIR=/data \
    SWAPD_LISTEN=0.0.0.0:8080 \
    SWAPD_LOG__FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/swapd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/swapd"]
CMD ["serve"]
