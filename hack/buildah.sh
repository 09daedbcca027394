# Sourced by the bash scripts that run buildah (image.sh, node-images.sh): one definition of
# how they run it.
#
# buildah's own isolation: no OCI runtime, no user namespaces, so it works inside a
# container too. Nothing the Containerfiles build runs a command; test/image's buildah run
# uses it.
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"

# A fresh machine may have no /etc/containers/policy.json (the trust policy every copy
# checks, including the commit of a build and a push to a local archive). Nothing is pulled
# here, so a policy that accepts anything is given instead of editing /etc: pass
# "${policy_args[@]}" to buildah, and remove ${policy:+"$policy"} on exit.
policy_args=()
policy=""
if [ ! -f /etc/containers/policy.json ]; then
  policy=$(mktemp)
  echo '{"default":[{"type":"insecureAcceptAnything"}]}' > "$policy"
  policy_args=(--signature-policy "$policy")
fi
