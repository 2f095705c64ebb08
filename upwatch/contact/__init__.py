"""The public contact form and its admin follow-up."""
