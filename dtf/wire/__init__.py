"""The wire: message codec, frames, endpoints, client, server loop and same-host lanes."""
