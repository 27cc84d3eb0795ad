# Every way a build from the same pins could install different code.
ARG BASE_IMAGE=scratch
FROM ubuntu:22.04 AS tools
FROM python:latest AS py
FROM ${BASE_IMAGE} AS base
FROM base
ARG NCCL_VERSION
RUN pip install --no-cache-dir "maturin>=1.5,<2" \
 && if [ -n "${NCCL_VERSION}" ]; then pip install "nvidia-nccl-cu12==${NCCL_VERSION}"; fi
RUN apt-get update && apt-get install -y --no-install-recommends git curl=7.88.1-10+deb12u8
RUN curl -fsSL -o /tmp/x.tar.gz https://example.com/x.tar.gz && tar -xzf /tmp/x.tar.gz
RUN curl -fsSL https://example.com/install.sh | sh
ADD https://example.com/tool.tar.gz /tmp/
ADD --checksum=sha256:0000000000000000000000000000000000000000000000000000000000000000 https://example.com/ok.tar.gz /tmp/
COPY --from=python_lock requirements.lock /tmp/requirements.lock
RUN pip install --require-hashes -r /tmp/requirements.lock \
 && pip install --no-deps --no-index /tmp/wheels/*.whl \
 && pip install --no-deps /opt/kvcr
