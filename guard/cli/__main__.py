from guard.cli import main

main()
