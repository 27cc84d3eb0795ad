# What BuildKit's own checks find: a stage keyword's casing, a deprecated
# instruction, a shell-form CMD, an undefined variable.
ARG BASE_IMAGE=scratch
FROM ${BASE_IMAGE} as base
MAINTAINER someone@example.com
COPY --from=provenance source-revisions.json /opt/kvcr-build/source-revisions.json
ENV PATH=/opt/bin:$UNDEFINED_PATH
CMD echo hello
