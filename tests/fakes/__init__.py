"""Local protocol servers for the tests: real HTTP (or git, or PostgreSQL) on 127.0.0.1
speaking the real APIs' shapes and refusing what the real ones refuse (Telegram, Railway,
Kubernetes, model providers, PagerDuty, forges), and launchers of the real daemons that install
offline (PostgreSQL, Prometheus and Alertmanager)."""
