"""Where the product's promises are enforced: read-only access, validated input, redacted output."""
