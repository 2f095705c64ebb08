"""Who is calling: a person or an API key, its project access, its plan and its metering.

Below every domain: the domains' endpoints depend on it, and it imports none of them."""
