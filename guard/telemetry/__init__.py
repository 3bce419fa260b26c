"""What Guard tells about itself: Prometheus metrics and its logging setup."""
