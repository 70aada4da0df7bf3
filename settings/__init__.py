"""The deployment's settings, the runtime paths and the protocol-config loading: the ground floor every package
but the protocol (``pubsub_core``, ``state``) may import, so a command that never touches Spark never imports the
Spark job (``streaming``)."""
