"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), the subset podsched honours."""
